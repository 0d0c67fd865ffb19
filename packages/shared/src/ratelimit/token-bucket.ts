import { realClock } from './clock.js';
import type { Clock } from './clock.js';

/**
 * A token bucket as client-go's flowcontrol limiter: holds up to burst tokens, refills at qps per
 * second, starts full. qps <= 0 means unlimited.
 */
export class TokenBucket {
  readonly unlimited: boolean;
  private readonly burst: number;
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    burst: number,
    private readonly clock: Clock = realClock,
  ) {
    this.unlimited = !(qps > 0);
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = this.burst;
    this.last = clock.now();
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  /** Takes a token if one is available now. */
  tryAccept(): boolean {
    if (this.unlimited) return true;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Takes a token now, possibly borrowing from the future; returns ms until it is really ours. */
  reserve(): number {
    if (this.unlimited) return 0;
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  /** Waits for a token; an aborted wait rejects and gives its token back. */
  wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const ms = this.reserve();
    if (ms === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        cancel();
        this.tokens += 1;
        reject(abortReason(signal!));
      };
      const cancel = this.clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r;
  const e = new Error('aborted');
  e.name = 'AbortError';
  return e;
}
