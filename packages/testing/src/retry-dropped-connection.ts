import { classifyError } from '@topovol/shared';

/**
 * Runs a write a test makes directly (not through a controller's queue, which would retry it) again
 * when the API server dropped the connection or did not answer in time: under thousands of writes a
 * keep-alive socket the server closes surfaces as "socket hang up". Only for calls that are safe to
 * repeat (server-side apply, or writers that read the live object first). Any other error, or the
 * last attempt's, is thrown as it is.
 */
export async function retryDroppedConnection<T>(call: () => Promise<T>, attempts = 5, delayMs = 200): Promise<{ value: T; retries: number }> {
  for (let retries = 0; ; retries++) {
    try {
      return { value: await call(), retries };
    } catch (err) {
      const kind = classifyError(err).kind;
      if ((kind !== 'Connection' && kind !== 'Timeout') || retries + 1 >= attempts) throw err;
      await new Promise((r) => setTimeout(r, delayMs * (retries + 1)));
    }
  }
}
