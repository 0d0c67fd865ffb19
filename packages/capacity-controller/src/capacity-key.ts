/**
 * The capacity loop's keys: `sync` recomputes segments × classes and deletes obsolete objects;
 * `item` refreshes one (class, segment[, pool]), named by its itemKey; `status` publishes the
 * aggregated status.
 */
export type CapacityKey = { kind: 'sync' } | { kind: 'status' } | { kind: 'item'; item: string };

export const SYNC: CapacityKey = Object.freeze({ kind: 'sync' });
export const STATUS: CapacityKey = Object.freeze({ kind: 'status' });
export const itemRefresh = (item: string): CapacityKey => ({ kind: 'item', item });

/** `sync`, `status` or `item:<itemKey>`: the key's identity in the queue and in logs. */
export function capacityKeyString(k: CapacityKey): string {
  return k.kind === 'item' ? `item:${k.item}` : k.kind;
}
