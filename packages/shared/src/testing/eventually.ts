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
