import type { TopologySegment } from '@topovol/shared/csi';
import { segmentMatches } from '@topovol/shared/csi';

/** Free space of one storage pool in one topology segment. */
export interface CapacityEntry {
  /** '' is the default pool (no `pool` parameter). */
  pool: string;
  /** {} for storage reachable from everywhere. */
  segment: TopologySegment;
  capacity: bigint;
  /** Reported by GetCapacity and enforced by CreateVolume when set. */
  maximumVolumeSize?: bigint;
}

/**
 * A topology term and a pool's segment are related when one contains the other: a pool for zone a
 * serves a claim that must be in zone a rack 1, and the capacity of zone a includes its racks'
 * pools. Unrelated keys (zone vs region) do not match; the empty term matches everything.
 */
export function segmentsOverlap(a: TopologySegment, b: TopologySegment): boolean {
  return segmentMatches(a, b) || segmentMatches(b, a);
}

function keyOf(pool: string, segment: TopologySegment): string {
  const sorted = Object.keys(segment)
    .sort()
    .map((k) => [k, segment[k]]);
  return `${pool}\u0000${JSON.stringify(sorted)}`;
}

/** The driver's capacity bookkeeping: pure data, no gRPC, so its rules are easy to test. */
export class CapacityModel {
  // Insertion order is placement order: CreateVolume takes the first entry that fits.
  private readonly entries = new Map<string, CapacityEntry>();

  set(segment: TopologySegment, capacity: bigint, opts: { pool?: string; maximumVolumeSize?: bigint } = {}): void {
    const pool = opts.pool ?? '';
    const entry: CapacityEntry = { pool, segment: { ...segment }, capacity };
    if (opts.maximumVolumeSize !== undefined) entry.maximumVolumeSize = opts.maximumVolumeSize;
    this.entries.set(keyOf(pool, segment), entry);
  }

  remove(segment: TopologySegment, pool = ''): boolean {
    return this.entries.delete(keyOf(pool, segment));
  }

  get(segment: TopologySegment, pool = ''): CapacityEntry | undefined {
    const e = this.entries.get(keyOf(pool, segment));
    return e ? { ...e, segment: { ...e.segment } } : undefined;
  }

  list(): CapacityEntry[] {
    return [...this.entries.values()].map((e) => ({ ...e, segment: { ...e.segment } }));
  }

  /**
   * GetCapacity: the sum over the pool's entries that overlap the topology (all entries when
   * none is given); maximumVolumeSize is the largest any of them allows, when any sets one.
   */
  query(topology: TopologySegment | undefined, pool = ''): { available: bigint; maximumVolumeSize?: bigint } {
    let available = 0n;
    let max: bigint | undefined;
    let anyMax = false;
    for (const e of this.entries.values()) {
      if (e.pool !== pool || (topology && !segmentsOverlap(e.segment, topology))) continue;
      available += e.capacity;
      if (e.maximumVolumeSize !== undefined) anyMax = true;
      const m = e.maximumVolumeSize ?? e.capacity;
      if (max === undefined || m > max) max = m;
    }
    return anyMax && max !== undefined ? { available, maximumVolumeSize: max } : { available };
  }

  /**
   * CreateVolume placement: the first candidate term (preferred, then requisite) that has an entry
   * of the pool with room for `size`; with no candidates, the first entry of the pool with room.
   * When requisite terms are given the entry must also overlap one of them. Takes the space and
   * returns the entry (a copy), or undefined when nothing fits.
   */
  reserve(size: bigint, pool: string, candidates: TopologySegment[], requisite: TopologySegment[]): CapacityEntry | undefined {
    const terms = candidates.length > 0 ? candidates : [{}];
    for (const term of terms) {
      for (const e of this.entries.values()) {
        if (e.pool !== pool || !segmentsOverlap(e.segment, term)) continue;
        if (requisite.length > 0 && !requisite.some((r) => segmentsOverlap(e.segment, r))) continue;
        if (e.capacity < size || (e.maximumVolumeSize !== undefined && e.maximumVolumeSize < size)) continue;
        e.capacity -= size;
        return { ...e, segment: { ...e.segment } };
      }
    }
    return undefined;
  }

  /** Gives space back (DeleteVolume); a no-op if the entry was removed meanwhile. */
  release(size: bigint, pool: string, segment: TopologySegment): void {
    const e = this.entries.get(keyOf(pool, segment));
    if (e) e.capacity += size;
  }
}
