import { compare, rfc3339 } from './build-storage-status.js';
import type { ClassSummary, ShardSummary, StorageStatus } from './capacity-status-types.js';
import { isExpired } from './expiry.js';
import { formatBytes, quantityBytes } from '@topovol/shared';
import type { StatusSummary } from './status-summary.js';

/**
 * What one shard holds, per class: its live pools and their summed capacity. Summaries compose (the
 * head's totals are computed from them), so no one has to read every shard to fill the printer
 * columns. expiryTime is the latest expiry of the pools counted; no classes means nothing is live.
 */
export function summarizeShard(shard: number, storage: readonly StorageStatus[] | undefined, nowMs: number): ShardSummary {
  const classes: ClassSummary[] = [];
  let latest = -Infinity;
  for (const s of storage ?? []) {
    const live = (s.pools ?? []).filter((p) => !isExpired(p, nowMs));
    if (live.length === 0) continue;
    const sum = live.reduce((acc, p) => acc + (quantityBytes(p.capacity) ?? 0n), 0n);
    classes.push({ storageClassName: s.storageClassName, poolCount: live.length, capacity: formatBytes(sum) });
    for (const p of live) latest = Math.max(latest, p.expiryTime === undefined ? Infinity : Date.parse(p.expiryTime));
  }
  classes.sort((a, b) => compare(a.storageClassName, b.storageClassName));
  const out: ShardSummary = { shard };
  if (classes.length === 0) return out;
  out.classes = classes;
  if (Number.isFinite(latest)) out.expiryTime = rfc3339(latest);
  return out;
}

/** Whether the entry still says something at nowMs (an entry without expiryTime always does). */
export function isLiveSummary(s: ShardSummary, nowMs: number): boolean {
  return (s.classes?.length ?? 0) > 0 && (s.expiryTime === undefined || Date.parse(s.expiryTime) > nowMs);
}

function sameClasses(a: readonly ClassSummary[] | undefined, b: readonly ClassSummary[] | undefined): boolean {
  const x = [...(a ?? [])].sort((p, q) => compare(p.storageClassName, q.storageClassName));
  const y = [...(b ?? [])].sort((p, q) => compare(p.storageClassName, q.storageClassName));
  return x.length === y.length && x.every((c, i) => c.storageClassName === y[i]!.storageClassName && c.poolCount === y[i]!.poolCount && quantityBytes(c.capacity) === quantityBytes(y[i]!.capacity));
}

/**
 * Whether the head's entry for a shard must be rewritten: the counts changed, or its expiry is
 * within half of expiryMs and a later one is known (the rule decide-publish.ts applies to pools),
 * so a busy shard costs one head write per changed figure and an idle one one per expiryMs/2.
 */
export function shardSummaryNeedsWrite(live: ShardSummary | undefined, want: ShardSummary, nowMs: number, expiryMs: number): boolean {
  if (!sameClasses(live?.classes, want.classes)) return true;
  if (!live || (want.classes?.length ?? 0) === 0) return false;
  const have = live.expiryTime === undefined ? Infinity : Date.parse(live.expiryTime);
  const next = want.expiryTime === undefined ? Infinity : Date.parse(want.expiryTime);
  if (Number.isNaN(have)) return true;
  if (next === Infinity) return have !== Infinity;
  return have < nowMs + expiryMs / 2 && next > have;
}

/**
 * The printer-column totals from the head's shard entries (expired ones ignored): classes with a
 * live pool anywhere, all live pools, and the largest per-class sum (not a sum over classes: one
 * physical pool is usually reported once per class).
 */
export function totalsFromShards(shards: readonly ShardSummary[] | undefined, nowMs: number): StatusSummary {
  const byClass = new Map<string, { pools: number; bytes: bigint }>();
  for (const s of shards ?? []) {
    if (!isLiveSummary(s, nowMs)) continue;
    for (const c of s.classes ?? []) {
      const acc = byClass.get(c.storageClassName) ?? { pools: 0, bytes: 0n };
      acc.pools += c.poolCount;
      acc.bytes += quantityBytes(c.capacity) ?? 0n;
      byClass.set(c.storageClassName, acc);
    }
  }
  const live = [...byClass.values()].filter((c) => c.pools > 0);
  const out: StatusSummary = { classCount: live.length, poolCount: live.reduce((n, c) => n + c.pools, 0) };
  if (live.length > 0) out.totalCapacity = formatBytes(live.reduce((m, c) => (c.bytes > m ? c.bytes : m), live[0]!.bytes));
  return out;
}
