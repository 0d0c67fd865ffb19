import type { Segment } from '../segments/segment.js';
import type { ConstrainedPool } from './topology-constrained-pools.js';
import { poolMatches, surePick } from './topology-constrained-pools.js';

/**
 * Segments with nodes that no pool serves (or where Ceph-CSI's pick is not sure, surePick): no
 * volume of the class can be made there, or not predictably. Ceph-CSI's
 * CreateVolume takes the first pool matching a preferred, then a requisite topology
 * (FindPoolAndTopology in internal/util/topology.go): for a node in such a segment it fails, or
 * makes the volume in another domain's pool, reachable from that domain only. (Its design,
 * docs/design/proposals/topology.md, "Limitations", meant to fall back to Immediate binding; the
 * code does not.)
 */
export function domainsWithoutPool(segments: readonly Segment[], pools: readonly ConstrainedPool[]): Segment[] {
  return segments.filter((s) => !surePick(pools, s));
}

/** What one pool serves, given the pools listed before it. */
export interface PoolService {
  pool: ConstrainedPool;
  /** The segments whose nodes get their volumes from this pool. */
  serves: Segment[];
  /** Whether that is every segment in its domain (else earlier pools serve some of them). */
  wholeDomain: boolean;
  /** Segments in its domain served by a pool listed before it. */
  taken: Segment[];
}

/**
 * Which pool serves which segments, as Ceph-CSI picks a pool for a volume: the first listed pool
 * whose domain the node's topology matches (internal/util/topology.go, matchPoolToTopology). With
 * overlapping domains a later pool serves only what the earlier ones leave. Pools whose domain
 * holds no segment are left out: capacity there is of no use to the scheduler.
 */
export function poolServices(segments: readonly Segment[], pools: readonly ConstrainedPool[]): PoolService[] {
  const chosen = new Map<ConstrainedPool, Segment[]>();
  for (const s of segments) {
    const p = surePick(pools, s);
    if (p) chosen.set(p, [...(chosen.get(p) ?? []), s]);
  }
  const out: PoolService[] = [];
  for (const pool of pools) {
    const inDomain = segments.filter((s) => poolMatches(pool, s));
    if (inDomain.length === 0) continue;
    const serves = chosen.get(pool) ?? [];
    out.push({ pool, serves, wholeDomain: serves.length === inDomain.length, taken: inDomain.filter((s) => !serves.includes(s)) });
  }
  return out;
}

export function formatSegment(s: Segment): string {
  const parts = Object.entries(s).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(',') : '<all nodes>';
}
