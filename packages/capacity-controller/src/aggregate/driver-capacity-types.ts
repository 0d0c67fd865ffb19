import type { KubeObject, ResourceType } from '@topovol/shared';

/**
 * The aggregated capacity status that seed 000 proposes for CSIDriver.Status, as a cluster-scoped
 * custom resource of the same name as the CSIDriver (config/crd). One difference from the seed:
 * `nodeTopology` is a label selector (matchLabels) as in CSIStorageCapacity, not a NodeSelector,
 * so both outputs describe a segment the same way.
 */
export const CSIDriverCapacities: ResourceType = { group: 'topovol.io', version: 'v1alpha1', plural: 'csidrivercapacities', kind: 'CSIDriverCapacity', namespaced: false };

export const FALLBACK_CLASS = '<fallback>';

export interface CapacityPool {
  name: string;
  nodeTopology?: { matchLabels?: Record<string, string> };
  nodeList?: string[];
  capacity?: string;
  maximumVolumeSize?: string;
  expiryTime?: string;
}

export interface CapacityStorage {
  storageClassName: string;
  /** Sum of this entry's pools, kept by the central writer. */
  totalCapacity?: string;
  pools?: CapacityPool[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface CSIDriverCapacity extends KubeObject {
  spec?: { driverName?: string };
  status?: {
    /** The largest class total, for `kubectl get` (JSONPath cannot sum). */
    totalCapacity?: string;
    storageClasses?: number;
    storage?: CapacityStorage[];
    conditions?: Condition[];
  };
}

/** What the central loop hands over: one pool of one class. */
export interface CapacityEntry {
  storageClassName: string;
  pool: string;
  nodeTopology?: { matchLabels: Record<string, string> };
  nodeList?: string[];
  capacity: string;
  maximumVolumeSize?: string;
}

export interface StatusCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}
