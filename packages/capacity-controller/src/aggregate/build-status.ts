import { bytesToQuantity, quantityToBytes } from '../objects/quantity-bytes.js';
import type { CapacityEntry, CapacityStorage, Condition, CSIDriverCapacity, StatusCondition } from './driver-capacity-types.js';

/**
 * The central writer's share of the status: storage entries grouped by class with their pools and
 * totals. `expiryTime` is left to the writer (it must not make unchanged content look changed).
 */
export function buildStorage(entries: readonly CapacityEntry[]): CapacityStorage[] {
  const byClass = new Map<string, CapacityStorage>();
  for (const e of entries) {
    let s = byClass.get(e.storageClassName);
    if (!s) byClass.set(e.storageClassName, (s = { storageClassName: e.storageClassName, pools: [] }));
    s.pools!.push({
      name: e.pool,
      ...(e.nodeTopology ? { nodeTopology: { matchLabels: { ...e.nodeTopology.matchLabels } } } : {}),
      ...(e.nodeList ? { nodeList: [...e.nodeList] } : {}),
      capacity: e.capacity,
      ...(e.maximumVolumeSize ? { maximumVolumeSize: e.maximumVolumeSize } : {}),
    });
  }
  const out = [...byClass.values()].sort((a, b) => (a.storageClassName < b.storageClassName ? -1 : 1));
  for (const s of out) {
    s.pools!.sort((a, b) => (a.name < b.name ? -1 : 1));
    s.totalCapacity = bytesToQuantity(s.pools!.reduce((sum, p) => sum + (quantityToBytes(p.capacity) ?? 0n), 0n));
  }
  return out;
}

/** The largest class total: what `kubectl get` shows as CAPACITY. */
export function largestTotal(storage: readonly CapacityStorage[]): string {
  let best = 0n;
  for (const s of storage) {
    const t = quantityToBytes(s.totalCapacity) ?? 0n;
    if (t > best) best = t;
  }
  return bytesToQuantity(best);
}

/** Conditions with metav1 semantics: lastTransitionTime moves only when status flips. */
export function mergeConditions(previous: readonly Condition[] | undefined, next: readonly StatusCondition[], now: string): Condition[] {
  return next.map((c) => {
    const old = previous?.find((p) => p.type === c.type);
    return { ...c, lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  });
}

export interface ExpiredPool {
  storageIndex: number;
  poolIndex: number;
  storageClassName: string;
  name: string;
}

/** Pools whose expiryTime has passed (their writer stopped refreshing them). */
export function expiredPools(obj: CSIDriverCapacity, now: number): ExpiredPool[] {
  const out: ExpiredPool[] = [];
  (obj.status?.storage ?? []).forEach((s, i) =>
    (s.pools ?? []).forEach((p, j) => {
      const t = p.expiryTime ? Date.parse(p.expiryTime) : NaN;
      if (!Number.isNaN(t) && t <= now) out.push({ storageIndex: i, poolIndex: j, storageClassName: s.storageClassName, name: p.name });
    }),
  );
  return out;
}

/**
 * A JSON patch removing expired pools, guarded by the object's resourceVersion and each pool's
 * name, so a pruner working on stale data fails instead of removing the wrong entry. Removal goes
 * from the highest index down so earlier removals do not shift later paths.
 */
export function prunePatch(obj: CSIDriverCapacity, expired: readonly ExpiredPool[]): unknown[] {
  const ops: unknown[] = [{ op: 'test', path: '/metadata/resourceVersion', value: obj.metadata?.resourceVersion }];
  const sorted = [...expired].sort((a, b) => b.storageIndex - a.storageIndex || b.poolIndex - a.poolIndex);
  for (const e of sorted) {
    ops.push({ op: 'test', path: `/status/storage/${e.storageIndex}/pools/${e.poolIndex}/name`, value: e.name });
    ops.push({ op: 'remove', path: `/status/storage/${e.storageIndex}/pools/${e.poolIndex}` });
  }
  return ops;
}
