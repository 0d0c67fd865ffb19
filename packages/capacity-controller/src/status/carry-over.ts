import type { CSIDriverCapacityShard, StorageStatus } from './capacity-status-types.js';
import { compare } from './build-storage-status.js';
import { isExpired, poolRefKey } from './expiry.js';
import { ownsPool, statusApplier } from './managed-fields.js';

/** Which pools the caller has no figure for yet, by class and pool name. */
export type KeepPublished = (storageClassName: string, pool: string) => boolean;

/**
 * `storage` plus the pools `manager` has published in `live` that the caller has no figure for yet
 * (`keep`), as they are, with their own expiryTime, unless they have expired (or expire further
 * ahead than this writer would set). A restarted instance
 * publishes before its driver has answered (or while it does not answer): without this, its first
 * write would release every pool it had published, and the aggregated status would lose them at
 * once instead of letting them lapse at their expiry, as a figure the driver no longer confirms
 * does. (Its CSIStorageCapacity objects, which kube-scheduler reads, survive a restart anyway.)
 */
export function carryOver(storage: readonly StorageStatus[], live: Iterable<CSIDriverCapacityShard | undefined>, manager: string, keep: KeepPublished, nowMs: number, expiryMs: number): StorageStatus[] {
  const have = new Set(storage.flatMap((s) => (s.pools ?? []).map((p) => poolRefKey({ storageClassName: s.storageClassName, pool: p.name }))));
  const byClass = new Map(storage.map((s) => [s.storageClassName, [...(s.pools ?? [])]]));
  let carried = false;
  for (const o of live) {
    const mine = o && statusApplier(o, manager);
    if (!mine) continue;
    for (const s of o.status?.storage ?? []) {
      for (const p of s.pools ?? []) {
        const ref = poolRefKey({ storageClassName: s.storageClassName, pool: p.name });
        // An expiry further ahead than this writer sets one (written while a clock ran ahead) is not kept.
        const implausible = p.expiryTime !== undefined && Date.parse(p.expiryTime) > nowMs + expiryMs;
        if (have.has(ref) || !keep(s.storageClassName, p.name) || isExpired(p, nowMs) || implausible || !ownsPool(mine.fieldsV1, s.storageClassName, p.name)) continue;
        have.add(ref);
        const pools = byClass.get(s.storageClassName) ?? [];
        byClass.set(s.storageClassName, pools);
        pools.push(structuredClone(p));
        carried = true;
      }
    }
  }
  if (!carried) return [...storage];
  return [...byClass.entries()]
    .sort(([a], [b]) => compare(a, b))
    .map(([storageClassName, pools]) => ({ storageClassName, pools: pools.sort((a, b) => compare(a.name, b.name)) }));
}
