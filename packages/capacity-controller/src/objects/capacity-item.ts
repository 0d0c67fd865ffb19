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
  /**
   * Label keys the segment's nodes lack and deeper overlapping segments have (see deeperKeys):
   * published as `DoesNotExist`, so the selector matches this segment's nodes only. Sorted.
   */
  absent?: readonly string[];
}

/** The pseudo class of the first KEP-1472 draft for inline ephemeral volumes: GetCapacity with no parameters. */
export const EPHEMERAL_CLASS = '<ephemeral>';

export function itemKey(item: CapacityItem): string {
  const base = [item.storageClassName, item.pool, segmentKey(item.segment)];
  return JSON.stringify(item.absent?.length ? [...base, [...item.absent]] : base);
}

/**
 * What an item's object stands for across a re-cut of the segments: a class in a segment, whatever
 * its `absent` keys (deeper segments appear and go), or a class's pool, whatever the segments it is
 * published for (a whole domain, or the segments that earlier pools leave it). An object whose item
 * changed only within this is kept until its replacements exist (planObsolete).
 */
export function itemBaseKey(item: CapacityItem): string {
  if (item.pool) return JSON.stringify([item.storageClassName, item.pool]);
  return itemKey({ storageClassName: item.storageClassName, segment: item.segment, pool: '' });
}

export function parseItemKey(key: string): CapacityItem {
  const [storageClassName, pool, seg, absent] = JSON.parse(key) as [string, string, string, string[] | undefined];
  const segment = Object.fromEntries(JSON.parse(seg) as [string, string][]);
  return { storageClassName, pool, segment, ...(absent?.length ? { absent } : {}) };
}

/** The selector that matches exactly the item's nodes: its labels, and none of the deeper keys. */
export function itemSelector(item: CapacityItem): { matchLabels: Record<string, string>; matchExpressions?: { key: string; operator: 'DoesNotExist' }[] } {
  return {
    matchLabels: { ...item.segment },
    ...(item.absent?.length ? { matchExpressions: item.absent.map((key) => ({ key, operator: 'DoesNotExist' as const })) } : {}),
  };
}
