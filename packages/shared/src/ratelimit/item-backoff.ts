import { realClock } from './clock.js';
import type { Clock } from './clock.js';
import { TokenBucket } from './token-bucket.js';

/** How long an item must wait before its next try (client-go's workqueue.RateLimiter). */
export interface RateLimiter<K> {
  when(item: K): number;
  forget(item: K): void;
  numRequeues(item: K): number;
}

/** Per-item exponential backoff: base, 2×base, 4×base … capped at max; forget resets. */
export class ItemExponentialBackoff<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    private readonly baseMs = 5,
    private readonly maxMs = 1_000_000,
  ) {}

  when(item: K): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    // 2^n overflows to Infinity long before it matters; the cap handles it.
    return Math.min(this.maxMs, this.baseMs * 2 ** n);
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/** An overall token bucket shared by all items: bounds total retries per second. */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  private readonly bucket: TokenBucket;

  constructor(qps = 10, burst = 100, clock: Clock = realClock) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }

  when(): number {
    return this.bucket.reserve();
  }

  forget(): void {}

  numRequeues(): number {
    return 0;
  }
}

/** The longest wait of several limiters. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  private readonly limiters: RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }

  when(item: K): number {
    return Math.max(0, ...this.limiters.map((l) => l.when(item)));
  }

  forget(item: K): void {
    for (const l of this.limiters) l.forget(item);
  }

  numRequeues(item: K): number {
    return Math.max(0, ...this.limiters.map((l) => l.numRequeues(item)));
  }
}

/** client-go's DefaultControllerRateLimiter: per-item 5 ms…1000 s, overall 10 qps with burst 100. */
export function defaultControllerRateLimiter<K>(clock: Clock = realClock): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(new ItemExponentialBackoff<K>(5, 1_000_000), new BucketRateLimiter<K>(10, 100, clock));
}
