import type { KubeObject, ResourceType } from '@topovol/shared';

/**
 * config/crd/topovol.io_csidrivercapacities.yaml, cluster-scoped, one object per CSI driver (the
 * head): conditions, one summary entry per shard and the totals behind the printer columns.
 */
export const CSIDriverCapacities: ResourceType = {
  group: 'topovol.io',
  version: 'v1alpha1',
  plural: 'csidrivercapacities',
  kind: 'CSIDriverCapacity',
  namespaced: false,
};
/** config/crd/topovol.io_csidrivercapacityshards.yaml: the pools, spread by status-shards.ts. */
export const CSIDriverCapacityShards: ResourceType = {
  group: 'topovol.io',
  version: 'v1alpha1',
  plural: 'csidrivercapacityshards',
  kind: 'CSIDriverCapacityShard',
  namespaced: false,
};
export const CSI_DRIVER_CAPACITY_API_VERSION = 'topovol.io/v1alpha1';

/** The special storageClassName values (CSIStorage in the first KEP-1472 draft). */
export const EPHEMERAL_STORAGE_CLASS = '<ephemeral>';
export const FALLBACK_STORAGE_CLASS = '<fallback>';

/** A label selector over Node labels (CSIStorageCapacity.nodeTopology's shape). */
export interface NodeTopology {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** One pool in status.storage[].pools[] (CSIStoragePool in the first KEP-1472 draft). */
export interface StoragePool {
  name: string;
  nodeTopology?: NodeTopology;
  nodeList?: string[];
  capacity?: string;
  maximumVolumeSize?: string;
  /** RFC 3339. */
  expiryTime?: string;
}

/** One entry of status.storage[] (CSIStorage in the first KEP-1472 draft). */
export interface StorageStatus {
  storageClassName: string;
  pools?: StoragePool[];
}

/** metav1.Condition as it travels over the wire. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** One class's live pools in one shard. */
export interface ClassSummary {
  storageClassName: string;
  poolCount: number;
  /** The sum of their capacities (a quantity). */
  capacity: string;
}

/** status.shards[] of the head: what one shard holds, kept by whoever prunes that shard. */
export interface ShardSummary {
  shard: number;
  classes?: ClassSummary[];
  /** The latest expiry of the pools counted: after it the entry says nothing; unset = forever. */
  expiryTime?: string;
}

export interface CSIDriverCapacityStatus {
  /** On the head only entries written before sharding (docs/adr/0010); they expire and are pruned. */
  storage?: StorageStatus[];
  conditions?: Condition[];
  shards?: ShardSummary[];
  classCount?: number;
  poolCount?: number;
  totalCapacity?: string;
}

export interface CSIDriverCapacity extends KubeObject {
  spec?: { driverName: string };
  status?: CSIDriverCapacityStatus;
}

export interface CSIDriverCapacityShard extends KubeObject {
  spec?: { driverName: string; shard: number };
  status?: { storage?: StorageStatus[] };
}

/** What the status writers read and apply: the head or a shard. */
export type CapacityStatusObject = CSIDriverCapacity | CSIDriverCapacityShard;
