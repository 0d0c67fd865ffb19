export { CSIDriverCapacities, FALLBACK_CLASS } from './driver-capacity-types.js';
export type { CapacityEntry, CapacityPool, CapacityStorage, Condition, CSIDriverCapacity, StatusCondition } from './driver-capacity-types.js';
export { CapacityStatusWriter, ensureDriverCapacity, pruneExpiredPools } from './status-writer.js';
export { nodeFieldManager, runPerNodeWriter } from './per-node-writer.js';
export type { PerNodeWriterOptions } from './per-node-writer.js';
export { buildStorage, expiredPools, largestTotal, mergeConditions, prunePatch } from './build-status.js';
