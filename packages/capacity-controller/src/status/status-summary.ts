import type { CSIDriverCapacityStatus } from './capacity-status-types.js';
import { isExpired } from './expiry.js';
import { formatBytes, quantityBytes } from '@topovol/shared';

/** The fields behind the printer columns (JSONPath can neither count nor sum). */
export interface StatusSummary {
  /** storage[] entries with at least one unexpired pool. */
  classCount: number;
  /** Unexpired pools over all entries. */
  poolCount: number;
  /**
   * The largest per-class sum of unexpired capacities, undefined without pools. Not a sum over
   * classes: the same physical pool is normally reported once per class.
   */
  totalCapacity?: string;
}

export function summarizeStatus(status: CSIDriverCapacityStatus | undefined, nowMs: number): StatusSummary {
  let classCount = 0;
  let poolCount = 0;
  let best: bigint | undefined;
  for (const s of status?.storage ?? []) {
    const live = (s.pools ?? []).filter((p) => !isExpired(p, nowMs));
    if (live.length === 0) continue;
    classCount++;
    poolCount += live.length;
    const sum = live.reduce((acc, p) => acc + (quantityBytes(p.capacity) ?? 0n), 0n);
    if (best === undefined || sum > best) best = sum;
  }
  const out: StatusSummary = { classCount, poolCount };
  if (best !== undefined) out.totalCapacity = formatBytes(best);
  return out;
}

export function sameSummary(status: CSIDriverCapacityStatus | undefined, want: StatusSummary): boolean {
  return (
    (status?.classCount ?? 0) === want.classCount &&
    (status?.poolCount ?? 0) === want.poolCount &&
    quantityBytes(status?.totalCapacity) === quantityBytes(want.totalCapacity)
  );
}
