import type { NodeTopology } from './capacity-status-types.js';

/**
 * What the central loop (or a per-node writer) knows about one pool of one kind of storage: the
 * input of the aggregated status. The writer adds expiryTime.
 */
export interface CapacityEntry {
  storageClassName: string;
  pool: string;
  nodeTopology?: NodeTopology;
  nodeList?: string[];
  /** A Kubernetes quantity. */
  capacity: string;
  maximumVolumeSize?: string;
  /**
   * When the driver last gave this figure (ms since epoch); the entry expires expiryMs after it.
   * Default: now. A figure the driver cannot confirm is then not kept alive by republishing it.
   */
  measuredAtMs?: number;
}

/** A condition the caller wants on the status; the writer fills lastTransitionTime and observedGeneration. */
export interface StatusCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}
