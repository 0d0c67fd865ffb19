/**
 * Polls until the check passes (returns without throwing) or the timeout elapses, then rethrows
 * the last failure. Integration tests assert end state on the server this way, never by sleeping.
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Retries `check` until it passes; rejects once `signal` aborts (for scenarios stopped from outside), with the last failure. */
export async function pollUntil(check: () => Promise<unknown>, signal: AbortSignal, intervalMs = 100): Promise<void> {
  let last: unknown;
  for (;;) {
    if (signal.aborted) throw new Error(`stopped while waiting: ${last instanceof Error ? last.message : String(last)}`);
    try {
      await check();
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
