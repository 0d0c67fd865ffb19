import type { Segment } from '../segments/segment.js';
import { segmentContains } from '../segments/segment.js';
import type { ConstrainedPool } from './topology-constrained-pools.js';

/**
 * Segments with nodes that no pool serves: volumes of the class can never be placed there (ceph-csi
 * docs/design/proposals/topology.md, "Limitations": a new domain needs a new pool in the StorageClass).
 */
export function domainsWithoutPool(segments: readonly Segment[], pools: readonly ConstrainedPool[]): Segment[] {
  return segments.filter((s) => !pools.some((p) => segmentContains(p.domain, s)));
}

/** Pools whose domain holds at least one of the segments; capacity elsewhere is of no use to the scheduler. */
export function poolsWithNodes(segments: readonly Segment[], pools: readonly ConstrainedPool[]): ConstrainedPool[] {
  return pools.filter((p) => segments.some((s) => segmentContains(p.domain, s)));
}

export function formatSegment(s: Segment): string {
  const parts = Object.entries(s).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(',') : '<all nodes>';
}
