import type { StatusCondition } from './capacity-entry.js';
import type { Condition } from './capacity-status-types.js';

/** metav1.Condition's limit on `message` (the CRD's maxLength, as apimachinery's). */
export const CONDITION_MESSAGE_MAX = 32_768;

/** A message cut to the limit, saying how much was left out: the API server refuses the whole write otherwise. */
export function fitConditionMessage(message: string): string {
  if (message.length <= CONDITION_MESSAGE_MAX) return message;
  const note = (cut: number): string => `… (${cut} more characters)`;
  const keep = CONDITION_MESSAGE_MAX - note(message.length).length;
  return message.slice(0, keep) + note(message.length - keep);
}

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
      // Long lists of uncovered domains, or a driver's error, can pass metav1.Condition's limit.
      message: fitConditionMessage(d.message),
    };
    if (generation !== undefined) c.observedGeneration = generation;
    out.push(c);
  }
  return out.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}
