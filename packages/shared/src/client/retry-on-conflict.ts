import { isConflict } from './errors.js';

/**
 * client-go's retry.RetryOnConflict: runs `attempt` (which must read the object afresh each time)
 * again while it fails with 409 Conflict, up to `steps` tries with a short growing pause
 * (retry.DefaultRetry: 10 ms, ×1, 5 steps, with jitter). Other errors are thrown at once.
 */
export async function retryOnConflict<T>(attempt: () => Promise<T>, steps = 5, baseDelayMs = 10): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isConflict(err) || i >= steps) throw err;
      await new Promise((r) => setTimeout(r, baseDelayMs * (1 + Math.random() * 0.1)));
    }
  }
}
