import { counter, exponentialBuckets, gauge, histogram } from '../metrics/registry.js';
import { defaultControllerRateLimiter } from '../ratelimit/item-backoff.js';
import type { RateLimiter } from '../ratelimit/item-backoff.js';
import { realClock } from '../ratelimit/clock.js';
import type { Clock } from '../ratelimit/clock.js';

export interface WorkQueueOptions<K> {
  rateLimiter?: RateLimiter<K>;
  clock?: Clock;
}

// client-go's workqueue metric names (k8s.io/client-go/util/workqueue/metrics.go), label "name".
const buckets = exponentialBuckets(1e-8, 10, 10);
const depth = gauge<'name'>({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'] });
const adds = counter<'name'>({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'] });
const latency = histogram<'name'>({
  name: 'workqueue_queue_duration_seconds',
  help: 'How long in seconds an item stays in workqueue before being requested.',
  labelNames: ['name'],
  buckets,
});
const workDuration = histogram<'name'>({
  name: 'workqueue_work_duration_seconds',
  help: 'How long in seconds processing an item from workqueue takes.',
  labelNames: ['name'],
  buckets,
});
const retries = counter<'name'>({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'] });
const unfinished = gauge<'name'>({
  name: 'workqueue_unfinished_work_seconds',
  help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration. Large values indicate stuck threads.',
  labelNames: ['name'],
});
const longest = gauge<'name'>({
  name: 'workqueue_longest_running_processor_seconds',
  help: 'How many seconds has the longest running processor for workqueue been running.',
  labelNames: ['name'],
});

const GAUGE_PERIOD_MS = 500;

/**
 * client-go's rate-limiting work queue. Holds keys, not objects; a key is "dirty" (needs work)
 * and/or "processing" (a worker has it). A key added while being processed is not handed to a
 * second worker: it is remembered and queued again once the first worker calls done, so any
 * number of adds during one reconcile cause at most one more.
 */
export class WorkQueue<K extends string = string> {
  private readonly queue: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Map<K, number>();
  private readonly addedAt = new Map<K, number>();
  private readonly waiting = new Map<K, { at: number; cancel: () => void }>();
  private readonly getters: ((k: K | undefined) => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private readonly rateLimiter: RateLimiter<K>;
  private readonly clock: Clock;
  private shutting = false;
  private drain = false;
  private readonly gaugeTimer: NodeJS.Timeout;

  constructor(
    readonly name: string,
    opts: WorkQueueOptions<K> = {},
  ) {
    this.clock = opts.clock ?? realClock;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(this.clock);
    depth.set({ name }, 0);
    adds.inc({ name }, 0);
    retries.inc({ name }, 0);
    unfinished.set({ name }, 0);
    longest.set({ name }, 0);
    this.gaugeTimer = setInterval(() => this.updateGauges(), GAUGE_PERIOD_MS);
    this.gaugeTimer.unref();
  }

  add(key: K): void {
    if (this.shutting || this.dirty.has(key)) return;
    adds.inc({ name: this.name });
    this.dirty.add(key);
    this.addedAt.set(key, this.clock.now());
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds after a delay; several delayed adds of one key keep the earliest. */
  addAfter(key: K, ms: number): void {
    if (this.shutting) return;
    if (ms <= 0) return this.add(key);
    const at = this.clock.now() + ms;
    const prev = this.waiting.get(key);
    if (prev && prev.at <= at) return;
    prev?.cancel();
    const cancel = this.clock.setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    this.waiting.set(key, { at, cancel });
  }

  /** Adds after the rate limiter's backoff for this key (a failure). */
  addRateLimited(key: K): void {
    if (this.shutting) return;
    retries.inc({ name: this.name });
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Resets the key's backoff (after a success). */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.rateLimiter.numRequeues(key);
  }

  /** The next key to work on; undefined once the queue is shut down (and, with drain, empty). */
  get(): Promise<K | undefined> {
    const k = this.queue.shift();
    if (k !== undefined) return Promise.resolve(this.take(k));
    if (this.shutting) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks the key's processing finished; a re-add that came meanwhile is queued now. */
  done(key: K): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    workDuration.observe({ name: this.name }, (this.clock.now() - started) / 1000);
    if (this.dirty.has(key)) this.push(key);
    if (this.processing.size === 0) for (const w of this.drainWaiters.splice(0)) w();
  }

  len(): number {
    return this.queue.length;
  }

  shuttingDown(): boolean {
    return this.shutting;
  }

  /** Stops handing out keys at once; workers get undefined. Delayed adds are dropped. */
  shutDown(): void {
    this.shutting = true;
    for (const w of this.waiting.values()) w.cancel();
    this.waiting.clear();
    for (const g of this.getters.splice(0)) g(undefined);
    clearInterval(this.gaugeTimer);
    this.updateGauges();
  }

  /** Stops accepting keys and resolves once every key being processed is done. */
  async shutDownWithDrain(): Promise<void> {
    this.drain = true;
    this.shutDown();
    if (this.processing.size === 0) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  private push(key: K): void {
    const g = this.getters.shift();
    if (g) return g(this.take(key));
    this.queue.push(key);
    depth.set({ name: this.name }, this.queue.length);
  }

  private take(key: K): K {
    const now = this.clock.now();
    this.dirty.delete(key);
    this.processing.set(key, now);
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) latency.observe({ name: this.name }, (now - added) / 1000);
    depth.set({ name: this.name }, this.queue.length);
    return key;
  }

  private updateGauges(): void {
    const now = this.clock.now();
    let total = 0;
    let max = 0;
    for (const started of this.processing.values()) {
      const s = (now - started) / 1000;
      total += s;
      max = Math.max(max, s);
    }
    unfinished.set({ name: this.name }, total);
    longest.set({ name: this.name }, max);
    depth.set({ name: this.name }, this.queue.length);
  }
}
