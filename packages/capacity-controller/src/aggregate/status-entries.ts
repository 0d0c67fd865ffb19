import type { DesiredItem } from '../objects/desired-items.js';
import type { MeasuredCapacity } from '../objects/capacity-object.js';
import { formatBytes } from '@topovol/shared';
import { itemSelector } from '../objects/capacity-item.js';
import { formatSegment } from '../pools/pool-coverage.js';
import type { CapacityEntry } from '../status/index.js';

/**
 * The central instance's entries of the aggregated status: one pool per tracked item that has
 * been measured. Pool names are the constrained pool's name (with the segment, `east zone=z2`, for
 * a pool published per segment it serves), else the segment spelled out (`zone=z1,rack=r1`): each
 * unique within a class. A whole-cluster segment has no nodeTopology
 * (neither nodeTopology nor nodeList means the entire cluster).
 */
/** An item's pool name in the aggregated status (see statusEntries). */
export function statusPoolName(d: DesiredItem): string {
  if (!d.item.pool) return formatSegment(d.item.segment);
  return d.poolPart ? `${d.item.pool} ${formatSegment(d.item.segment)}` : d.item.pool;
}

export function statusEntries(items: Iterable<DesiredItem>, measured: (key: DesiredItem) => (MeasuredCapacity & { atMs?: number }) | undefined): CapacityEntry[] {
  const out: CapacityEntry[] = [];
  for (const d of items) {
    const m = measured(d);
    if (!m) continue;
    const { item } = d;
    const hasTopology = Object.keys(item.segment).length > 0;
    out.push({
      storageClassName: item.storageClassName,
      pool: statusPoolName(d),
      ...(hasTopology ? { nodeTopology: itemSelector(item) } : {}),
      capacity: formatBytes(m.available),
      ...(m.maximumVolumeSize !== undefined ? { maximumVolumeSize: formatBytes(m.maximumVolumeSize) } : {}),
      // The figure's age, not the publish time, sets its expiry (a failing driver's figure lapses).
      ...(m.atMs !== undefined ? { measuredAtMs: m.atMs } : {}),
    });
  }
  return out.sort((a, b) => (a.storageClassName + '\u0000' + a.pool < b.storageClassName + '\u0000' + b.pool ? -1 : 1));
}
