import { realClock } from './clock.js';
import type { Clock } from './clock.js';

// Refills are fractional, so token counts carry float noise; without slack a token that is due
// "exactly now" could be reported as 1e-15 short.
const EPSILON = 1e-9;

/**
 * A token bucket with the semantics of client-go's flowcontrol limiter (golang.org/x/time/rate):
 * it holds at most burst tokens, refills continuously at qps tokens per second and starts full.
 * qps <= 0 means unlimited: every call is admitted at once.
 */
export class TokenBucket {
  readonly unlimited: boolean;
  readonly qps: number;
  readonly burst: number;
  // Tokens as of `last`; negative when callers have reserved tokens that are not yet minted.
  private tokens: number;
  private last: number;

  constructor(
    qps: number,
    burst: number,
    private readonly clock: Clock = realClock,
  ) {
    this.unlimited = !(qps > 0); // also catches NaN
    this.qps = this.unlimited ? 0 : qps;
    this.burst = burst >= 1 ? Math.floor(burst) : 1;
    this.tokens = this.burst;
    this.last = clock.now();
  }

  /** Takes a token if one is available right now; never waits. */
  tryAccept(): boolean {
    if (this.unlimited) return true;
    this.refill();
    if (this.tokens < 1 - EPSILON) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Takes a token unconditionally, borrowing from the future if the bucket is empty, and returns
   * how many ms the caller must wait before using it (0: use it now). Later callers queue behind.
   */
  reserve(): number {
    if (this.unlimited) return 0;
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= -EPSILON) return 0;
    return Math.ceil((-this.tokens * 1000) / this.qps - EPSILON);
  }

  /**
   * Resolves once a token is ours. If signal aborts first, rejects with its reason (an AbortError
   * when the reason is not an Error) and gives the reserved token back.
   */
  wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const ms = this.reserve();
    if (ms === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        cancel();
        // Un-reserve, so an abandoned wait does not slow down the callers behind it for good.
        this.tokens = Math.min(this.burst, this.tokens + 1);
        reject(abortError(signal));
      };
      const cancel = this.clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
      this.last = now;
    }
  }
}

function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  const err = new Error('The operation was aborted', reason === undefined ? undefined : { cause: reason });
  err.name = 'AbortError';
  return err;
}
