import type { KubeObject, ResourceType } from '@topovol/shared';

/** config/crd/topovol.io_csidrivercapacities.yaml, cluster-scoped, one object per CSI driver. */
export const CSIDriverCapacities: ResourceType = {
  group: 'topovol.io',
  version: 'v1alpha1',
  plural: 'csidrivercapacities',
  kind: 'CSIDriverCapacity',
  namespaced: false,
};
export const CSI_DRIVER_CAPACITY_API_VERSION = 'topovol.io/v1alpha1';

/** The seed's special storageClassName values (CSIStorage in seed 000). */
export const EPHEMERAL_STORAGE_CLASS = '<ephemeral>';
export const FALLBACK_STORAGE_CLASS = '<fallback>';

/** As CSIStorageCapacity.nodeTopology: matchLabels of a segment (an atomic LabelSelector). */
/** A label selector over Node labels (CSIStorageCapacity.nodeTopology's shape). */
export interface NodeTopology {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** One pool in status.storage[].pools[] (seed 000 CSIStoragePool). */
export interface StoragePool {
  name: string;
  nodeTopology?: NodeTopology;
  nodeList?: string[];
  capacity?: string;
  maximumVolumeSize?: string;
  /** RFC 3339. */
  expiryTime?: string;
}

/** One entry of status.storage[] (seed 000 CSIStorage). */
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

export interface CSIDriverCapacityStatus {
  storage?: StorageStatus[];
  conditions?: Condition[];
  classCount?: number;
  poolCount?: number;
  totalCapacity?: string;
}

export interface CSIDriverCapacity extends KubeObject {
  spec?: { driverName: string };
  status?: CSIDriverCapacityStatus;
}
