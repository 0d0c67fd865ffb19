import type { CSIDriverCapacityStatus, StoragePool } from './capacity-status-types.js';

/** An entry without expiryTime is valid forever (as in the first KEP-1472 draft); an unparsable one counts as expired. */
export function isExpired(pool: StoragePool, nowMs: number): boolean {
  if (pool.expiryTime === undefined) return false;
  const t = Date.parse(pool.expiryTime);
  return Number.isNaN(t) || t <= nowMs;
}

export interface PoolRef {
  storageClassName: string;
  pool: string;
}

export function expiredPools(status: CSIDriverCapacityStatus | undefined, nowMs: number): PoolRef[] {
  const out: PoolRef[] = [];
  for (const s of status?.storage ?? []) for (const p of s.pools ?? []) if (isExpired(p, nowMs)) out.push({ storageClassName: s.storageClassName, pool: p.name });
  return out;
}

export const poolRefKey = (r: PoolRef): string => JSON.stringify([r.storageClassName, r.pool]);

/** The status without the given pools; storage entries left with no pools are dropped. */
export function withoutPools(status: CSIDriverCapacityStatus, drop: readonly PoolRef[]): CSIDriverCapacityStatus {
  const gone = new Set(drop.map(poolRefKey));
  const out: CSIDriverCapacityStatus = { ...status };
  if (!status.storage) return out;
  const storage = [];
  for (const s of status.storage) {
    if (!s.pools) {
      storage.push(s);
      continue;
    }
    const pools = s.pools.filter((p) => !gone.has(poolRefKey({ storageClassName: s.storageClassName, pool: p.name })));
    if (pools.length > 0) storage.push({ ...s, pools });
    else if (pools.length === s.pools.length) storage.push(s);
  }
  if (storage.length > 0) out.storage = storage;
  else delete out.storage;
  return out;
}
