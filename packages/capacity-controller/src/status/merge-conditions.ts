import type { StatusCondition } from './capacity-entry.js';
import type { Condition } from './capacity-status-types.js';

/**
 * metav1.Conditions for the desired ones, as apimachinery's meta.SetStatusCondition keeps them: the
 * old lastTransitionTime while the status stays the same, now when it changes or is new.
 * Sorted by type so equal input compares equal.
 */
export function mergeConditions(desired: readonly StatusCondition[], live: readonly Condition[] | undefined, generation: number | undefined, now: string): Condition[] {
  const old = new Map((live ?? []).map((c) => [c.type, c]));
  const seen = new Set<string>();
  const out: Condition[] = [];
  for (const d of desired) {
    if (seen.has(d.type)) continue;
    seen.add(d.type);
    const prev = old.get(d.type);
    const c: Condition = {
      type: d.type,
      status: d.status,
      lastTransitionTime: prev && prev.status === d.status ? prev.lastTransitionTime : now,
      reason: d.reason,
      message: d.message,
    };
    if (generation !== undefined) c.observedGeneration = generation;
    out.push(c);
  }
  return out.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}
