// The aggregated capacity status (issue 5 "Outputs 2" and "Per-node mode"): the CSIDriverCapacity
// CRD in config/crd, its pure builders, the SSA writer and the per-node writer.
export type { CapacityEntry, StatusCondition } from './capacity-entry.js';
export {
  CSIDriverCapacities,
  CSI_DRIVER_CAPACITY_API_VERSION,
  EPHEMERAL_STORAGE_CLASS,
  FALLBACK_STORAGE_CLASS,
} from './capacity-status-types.js';
export type { CSIDriverCapacity, CSIDriverCapacityStatus, Condition, NodeTopology, StoragePool, StorageStatus } from './capacity-status-types.js';
export { buildStorageStatus, entryProblem, rfc3339 } from './build-storage-status.js';
export type { BuiltStorageStatus } from './build-storage-status.js';
export { summarizeStatus } from './status-summary.js';
export type { StatusSummary } from './status-summary.js';
export { expiredPools, isExpired } from './expiry.js';
export { mergeConditions } from './merge-conditions.js';
export { decidePublish } from './decide-publish.js';
export { planPrune } from './plan-prune.js';
export type { PruneStep } from './plan-prune.js';
export { CapacityStatusWriter, OBJECT_FIELD_MANAGER, SUMMARY_FIELD_MANAGER } from './capacity-status-writer.js';
export type { CapacityStatusWriterOptions } from './capacity-status-writer.js';
export { isPruner, perNodeFieldManager, runPerNodeWriter } from './per-node-writer.js';
export type { PerNodeWriterOptions } from './per-node-writer.js';
