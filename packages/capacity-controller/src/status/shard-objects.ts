import type { KubeClient } from '@topovol/shared';
import { CSIDriverCapacityShards } from './capacity-status-types.js';
import type { CSIDriverCapacityShard, StorageStatus } from './capacity-status-types.js';
import { LABEL_CAPACITY_DRIVER, shardOf } from './status-shards.js';

/** A driver's shard objects by index, in one list request (whatever shard count wrote them). */
export async function listShards(client: KubeClient, driverName: string): Promise<Map<number, CSIDriverCapacityShard | undefined>> {
  const list = await client.list<CSIDriverCapacityShard>(CSIDriverCapacityShards, { labelSelector: `${LABEL_CAPACITY_DRIVER}=${driverName}` });
  const out = new Map<number, CSIDriverCapacityShard | undefined>();
  // The label is only a filter: spec (checked by the CRD against the name) says whose shard it is.
  for (const o of list.items) if (o.spec?.driverName === driverName && Number.isInteger(o.spec.shard)) out.set(o.spec.shard, o);
  return out;
}

/** storage[] split by the shard of each pool's name; classes left without pools are left out. */
export function splitByShard(storage: readonly StorageStatus[], shards: number): Map<number, StorageStatus[]> {
  const out = new Map<number, StorageStatus[]>();
  for (const s of storage) {
    const byShard = new Map<number, NonNullable<StorageStatus['pools']>>();
    for (const p of s.pools ?? []) {
      const i = shardOf(p.name, shards);
      const pools = byShard.get(i);
      if (pools) pools.push(p);
      else byShard.set(i, [p]);
    }
    for (const [i, pools] of byShard) {
      const list = out.get(i);
      if (list) list.push({ storageClassName: s.storageClassName, pools });
      else out.set(i, [{ storageClassName: s.storageClassName, pools }]);
    }
  }
  return out;
}
