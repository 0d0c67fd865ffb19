import { isNotFound } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { compare } from './build-storage-status.js';
import { CSIDriverCapacities } from './capacity-status-types.js';
import type { CSIDriverCapacity, CSIDriverCapacityShard, StoragePool, StorageStatus } from './capacity-status-types.js';
import { listShards } from './shard-objects.js';

export interface DriverCapacityStatus {
  /** The head: conditions, shard summaries, totals (undefined before the first write). */
  head?: CSIDriverCapacity;
  shards: CSIDriverCapacityShard[];
  /** Every pool of every shard (and any the head still holds from before sharding), by class then name. */
  storage: StorageStatus[];
}

/**
 * A driver's whole aggregated status, as a reader sees it: one list of its shards and the head.
 * A pool found twice (the shard count changed, and its old place has not expired yet) counts
 * once, with the later expiry.
 */
export async function readDriverStatus(client: KubeClient, driverName: string): Promise<DriverCapacityStatus> {
  const shards = [...(await listShards(client, driverName)).values()].filter((s): s is CSIDriverCapacityShard => s !== undefined);
  let head: CSIDriverCapacity | undefined;
  try {
    head = await client.get<CSIDriverCapacity>(CSIDriverCapacities, driverName);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return { head, shards: shards.sort((a, b) => a.spec!.shard - b.spec!.shard), storage: mergeStorage([...shards.map((s) => s.status?.storage), head?.status?.storage]) };
}

const expiry = (p: StoragePool): number => (p.expiryTime === undefined ? Infinity : Date.parse(p.expiryTime));

export function mergeStorage(parts: readonly (readonly StorageStatus[] | undefined)[]): StorageStatus[] {
  const byClass = new Map<string, Map<string, StoragePool>>();
  for (const part of parts) {
    for (const s of part ?? []) {
      const pools = byClass.get(s.storageClassName) ?? new Map<string, StoragePool>();
      byClass.set(s.storageClassName, pools);
      for (const p of s.pools ?? []) {
        const seen = pools.get(p.name);
        if (!seen || expiry(p) > expiry(seen)) pools.set(p.name, p);
      }
    }
  }
  return [...byClass]
    .filter(([, pools]) => pools.size > 0)
    .sort(([a], [b]) => compare(a, b))
    .map(([storageClassName, pools]) => ({ storageClassName, pools: [...pools.values()].sort((a, b) => compare(a.name, b.name)) }));
}
