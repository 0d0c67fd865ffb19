import { realClock } from './clock.js';
import type { Clock } from './clock.js';
import { doublingBackoffMs } from './doubling-backoff.js';
import { TokenBucket } from './token-bucket.js';

/**
 * Decides how long an item must wait before its next try (client-go's workqueue RateLimiter).
 * when() records a failure; forget() is called on success so the next failure starts afresh.
 */
export interface RateLimiter<K> {
  /** Records a failure of item and returns the ms it should wait before being retried. */
  when(item: K): number;
  /** Clears the item's history (e.g. after it was processed successfully). */
  forget(item: K): void;
  /** Failures recorded for item since it was last forgotten. */
  numRequeues(item: K): number;
}

const DEFAULT_BACKOFF_BASE_MS = 5;
const DEFAULT_BACKOFF_MAX_MS = 1_000_000;
const DEFAULT_BUCKET_QPS = 10;
const DEFAULT_BUCKET_BURST = 100;

/** Per-item exponential backoff: base, 2×base, 4×base … capped at max; forget resets the item. */
export class ItemExponentialBackoff<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    readonly baseMs: number = DEFAULT_BACKOFF_BASE_MS,
    readonly maxMs: number = DEFAULT_BACKOFF_MAX_MS,
  ) {}

  when(item: K): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    return doublingBackoffMs(this.baseMs, n + 1, this.maxMs);
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * One token bucket shared by all items: bounds the overall retry rate, so a burst of failing
 * items cannot hammer the API server even while each item's own backoff is still short.
 */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  readonly bucket: TokenBucket;

  constructor(qps: number = DEFAULT_BUCKET_QPS, burst: number = DEFAULT_BUCKET_BURST, clock: Clock = realClock) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }

  when(_item: K): number {
    return this.bucket.reserve();
  }

  // Tokens are not per item, so there is nothing to forget or count.
  forget(_item: K): void {}

  numRequeues(_item: K): number {
    return 0;
  }
}

/** Combines limiters: the wait is the longest any of them asks for; all of them record failures. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  private readonly limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }

  when(item: K): number {
    // Every limiter must see the failure (not just until one wins), so map before taking the max.
    return Math.max(0, ...this.limiters.map((l) => l.when(item)));
  }

  forget(item: K): void {
    for (const l of this.limiters) l.forget(item);
  }

  numRequeues(item: K): number {
    return Math.max(0, ...this.limiters.map((l) => l.numRequeues(item)));
  }
}

/**
 * client-go's DefaultControllerRateLimiter: per-item backoff from 5 ms doubling to 1000 s (or
 * `maxBackoffMs`), and overall no more than 10 retries per second after a burst of 100.
 */
export function defaultControllerRateLimiter<K = string>(clock: Clock = realClock, maxBackoffMs: number = DEFAULT_BACKOFF_MAX_MS): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialBackoff<K>(DEFAULT_BACKOFF_BASE_MS, Math.max(DEFAULT_BACKOFF_BASE_MS, maxBackoffMs)),
    new BucketRateLimiter<K>(DEFAULT_BUCKET_QPS, DEFAULT_BUCKET_BURST, clock),
  );
}
