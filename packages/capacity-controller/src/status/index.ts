// The aggregated capacity status (CSIDriverCapacity, sharded as docs/adr/0010 says): the CRDs in
// config/crd, their pure builders, the SSA writers (central and per node) and the reader.
export type { CapacityEntry, StatusCondition } from './capacity-entry.js';
export {
  CSIDriverCapacities,
  CSIDriverCapacityShards,
  CSI_DRIVER_CAPACITY_API_VERSION,
  EPHEMERAL_STORAGE_CLASS,
  FALLBACK_STORAGE_CLASS,
} from './capacity-status-types.js';
export type {
  CapacityStatusObject,
  ClassSummary,
  CSIDriverCapacity,
  CSIDriverCapacityShard,
  CSIDriverCapacityStatus,
  Condition,
  NodeTopology,
  ShardSummary,
  StoragePool,
  StorageStatus,
} from './capacity-status-types.js';
export { DEFAULT_STATUS_SHARDS, fnv1a32, LABEL_CAPACITY_DRIVER, MAX_STATUS_SHARDS, shardCountProblem, shardName, shardOf } from './status-shards.js';
export { buildStorageStatus, entryProblem, rfc3339 } from './build-storage-status.js';
export type { BuiltStorageStatus } from './build-storage-status.js';
export { summarizeStatus } from './status-summary.js';
export type { StatusSummary } from './status-summary.js';
export { isLiveSummary, shardSummaryNeedsWrite, summarizeShard, totalsFromShards } from './shard-summary.js';
export { expiredPools, isExpired, poolRefKey } from './expiry.js';
export { carryOver } from './carry-over.js';
export type { KeepPublished } from './carry-over.js';
export { CONDITION_MESSAGE_MAX, fitConditionMessage, mergeConditions } from './merge-conditions.js';
export { decidePublish } from './decide-publish.js';
export { planPrune } from './plan-prune.js';
export type { PruneStep } from './plan-prune.js';
export { listShards, splitByShard } from './shard-objects.js';
export { mergeStorage, readDriverStatus } from './read-status.js';
export type { DriverCapacityStatus } from './read-status.js';
export { OBJECT_FIELD_MANAGER } from './status-object-writer.js';
export { SUMMARY_FIELD_MANAGER, shardSummaryManager } from './status-summarizer.js';
export { CapacityStatusWriter } from './capacity-status-writer.js';
export type { CapacityStatusWriterOptions } from './capacity-status-writer.js';
export { isPruner, NodeShardWriter, perNodeFieldManager, runPerNodeWriter } from './per-node-writer.js';
export type { NodeShardWriterOptions, PerNodeWriterOptions } from './per-node-writer.js';
