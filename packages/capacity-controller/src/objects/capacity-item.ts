import type { Segment } from '../segments/segment.js';
import { segmentKey } from '../segments/segment.js';

/**
 * One thing whose capacity is tracked: a StorageClass (or `<ephemeral>`) in a segment, and for
 * pool-constrained classes the pool serving that segment. One GetCapacity call refreshes it and one
 * CSIStorageCapacity object publishes it.
 */
export interface CapacityItem {
  storageClassName: string;
  segment: Segment;
  /** '' unless the class lists topology-constrained pools. */
  pool: string;
}

/** The pseudo class of the seed for inline ephemeral volumes: GetCapacity with no parameters. */
export const EPHEMERAL_CLASS = '<ephemeral>';

export function itemKey(item: CapacityItem): string {
  return JSON.stringify([item.storageClassName, item.pool, segmentKey(item.segment)]);
}

export function parseItemKey(key: string): CapacityItem {
  const [storageClassName, pool, seg] = JSON.parse(key) as [string, string, string];
  const segment = Object.fromEntries(JSON.parse(seg) as [string, string][]);
  return { storageClassName, pool, segment };
}
