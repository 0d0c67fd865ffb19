import type { KubeClient } from '@topovol/shared';
import { CSIDriverCapacities, CSIDriverCapacityShards } from './capacity-status-types.js';
import type { CSIDriverCapacity, CSIDriverCapacityShard } from './capacity-status-types.js';
import { StatusObjectWriter } from './status-object-writer.js';
import type { StatusObjectWriterOptions } from './status-object-writer.js';
import { LABEL_CAPACITY_DRIVER, shardName } from './status-shards.js';

/** The head: CSIDriverCapacity `<driver>` (conditions, shard summaries, totals). */
export function headWriter(client: KubeClient, driverName: string, opts: StatusObjectWriterOptions): StatusObjectWriter<CSIDriverCapacity> {
  return new StatusObjectWriter<CSIDriverCapacity>(client, { resource: CSIDriverCapacities, name: driverName, spec: { driverName }, labels: { [LABEL_CAPACITY_DRIVER]: driverName } }, opts);
}

/** Shard `index`: CSIDriverCapacityShard `<driver>-<index>` (pools). */
export function shardWriter(client: KubeClient, driverName: string, index: number, opts: StatusObjectWriterOptions): StatusObjectWriter<CSIDriverCapacityShard> {
  return new StatusObjectWriter<CSIDriverCapacityShard>(
    client,
    { resource: CSIDriverCapacityShards, name: shardName(driverName, index), spec: { driverName, shard: index }, labels: { [LABEL_CAPACITY_DRIVER]: driverName } },
    opts,
  );
}
