/**
 * The wait after the `failures`-th failure in a row (1 for the first): `baseMs`, then twice that,
 * and so on, never more than `maxMs`. client-go's ItemExponentialFailureRateLimiter, and every
 * doubling retry here (a failed reconcile, GetCapacity, an Event write, a re-selected node, a
 * workload's next rollback). 2^n grows to Infinity, never wraps: the cap absorbs it.
 */
export function doublingBackoffMs(baseMs: number, failures: number, maxMs = Infinity): number {
  if (failures < 1) return 0;
  return Math.min(maxMs, baseMs * 2 ** (failures - 1));
}
