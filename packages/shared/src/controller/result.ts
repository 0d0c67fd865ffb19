/**
 * What a reconcile asks of the queue once it succeeded (controller-runtime's reconcile.Result): a
 * periodic re-check after requeueAfterMs, or nothing. A failure is a thrown error, retried with
 * backoff; a requeue is a return value, never a side effect.
 */
export interface Result {
  requeueAfterMs?: number;
}

/** Done: nothing to do until an event enqueues the key again. */
export const DONE: Result = Object.freeze({});

/** A Result that re-checks the key after `ms` when it is a positive number, and is done otherwise. */
export function requeueAfter(ms: number | undefined | void): Result {
  return typeof ms === 'number' && ms > 0 ? { requeueAfterMs: ms } : DONE;
}
