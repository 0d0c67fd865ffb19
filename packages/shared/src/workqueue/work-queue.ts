import { realClock } from '../ratelimit/clock.js';
import type { Cancel, Clock } from '../ratelimit/clock.js';
import { defaultControllerRateLimiter } from '../ratelimit/item-backoff.js';
import type { RateLimiter } from '../ratelimit/item-backoff.js';
import { LeveledFifo } from './fifo.js';
import { MinHeap } from './min-heap.js';
import { QueueMetrics } from './work-queue-metrics.js';

export interface WorkQueueOptions<K = string> {
  /**
   * A stable, readable string per key: keys with equal strings are one key (deduplicated, never
   * processed twice at once). Required for keys that are not strings; a string key is its own.
   */
  keyString?: (key: K) => string;
  /** Backoff for addRateLimited, keyed by keyString; defaults to defaultControllerRateLimiter on the queue's clock. */
  rateLimiter?: RateLimiter<string>;
  /**
   * The default rate limiter's per-item cap instead of client-go's 1000 s: a loop whose keys are
   * all re-checked on a period (a poll) retries a failing key at least that often.
   */
  maxBackoffMs?: number;
  /** Drives delayed adds, backoffs and metric durations; tests pass a FakeClock. */
  clock?: Clock;
  /** Publish workqueue_* metrics labelled with the queue's name (default true; off for an empty name). */
  metrics?: boolean;
  /**
   * Which keys go first: ready keys are handed out by ascending level (0 first), in FIFO order
   * within a level. Levels are clamped to 0..LAST_LEVEL (fifo.ts); NaN goes last. Default: one
   * level, client-go's plain FIFO.
   */
  priority?: (key: K) => number;
}

/** String keys may leave keyString out; any other key type must give one. */
export type WorkQueueArgs<K> = [K] extends [string] ? [opts?: WorkQueueOptions<K>] : [opts: WorkQueueOptions<K> & { keyString: (key: K) => string }];

/**
 * client-go's rate-limiting, delaying work queue. It holds keys, not objects, and tracks two sets:
 * dirty (needs work) and processing (a worker has it). A key is handed to at most one worker at a
 * time; a key added while being processed stays dirty and is queued again once that worker calls
 * done, so any number of adds during one reconcile cause at most one more. Keys may be typed values
 * (a loop's discriminated union); the queue tells them apart by keyString, as client-go's queue
 * compares its comparable keys.
 */
export class WorkQueue<K = string> {
  readonly name: string;
  /** The key's identity in the queue, its backoff and its log lines. */
  readonly keyString: (key: K) => string;
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<string>;
  private readonly metrics: QueueMetrics<string> | undefined;

  private readonly queue: LeveledFifo<K>;
  /** Keys that need work, by keyString (the value: the key as added). */
  private readonly dirty = new Map<string, K>();
  private readonly processing = new Set<string>();
  private readonly getters: ((key: K | undefined) => void)[] = [];

  // Delayed adds: one live entry per key (the earliest), found via a min-heap with lazy deletion,
  // and a single timer armed for the earliest entry.
  private readonly delayed = new Map<string, DelayedEntry<K>>();
  private readonly heap = new MinHeap<DelayedEntry<K>>((a, b) => a.at - b.at || a.seq - b.seq);
  private delayedSeq = 0;
  private timer: { at: number; cancel: Cancel } | undefined;

  private shutting = false;
  private held = false;
  private drain = false;
  private drainWaiters: (() => void)[] = [];

  constructor(name: string, ...[opts = {}]: WorkQueueArgs<K>) {
    this.name = name;
    // Only string keys may come without keyString (WorkQueueArgs), so this is their identity.
    this.keyString = opts.keyString ?? ((key: K) => key as unknown as string);
    this.clock = opts.clock ?? realClock;
    if (opts.maxBackoffMs !== undefined && !(Number.isFinite(opts.maxBackoffMs) && opts.maxBackoffMs > 0)) throw new Error(`work queue ${name}: maxBackoffMs must be a positive number, not ${opts.maxBackoffMs}`);
    if (opts.maxBackoffMs !== undefined && opts.rateLimiter) throw new Error(`work queue ${name}: maxBackoffMs caps the default rate limiter; give it or a rateLimiter, not both`);
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<string>(this.clock, opts.maxBackoffMs);
    this.queue = new LeveledFifo<K>(opts.priority ?? (() => 0));
    // As in client-go, an unnamed queue has no metrics: its series could not be told apart.
    this.metrics = opts.metrics !== false && name !== '' ? new QueueMetrics<string>(name, this.clock, () => this.dirty.size) : undefined;
  }

  /** Marks key as needing work. No-op if it is already waiting, or once the queue is shutting down. */
  add(key: K): void {
    if (this.held) return;
    const id = this.keyString(key);
    if (this.shutting || this.dirty.has(id)) return;
    this.dirty.set(id, key);
    this.metrics?.added(id);
    // Being processed: leave it dirty; done() queues it again.
    if (this.processing.has(id)) return;
    this.enqueue(key);
  }

  /** Whether a reconcile of key will still start: it waits in the queue, or was added again while being processed. */
  isQueued(key: K): boolean {
    return this.dirty.has(this.keyString(key));
  }

  /** Adds key after ms. Pending delayed adds of one key are merged, keeping the earliest time. */
  addAfter(key: K, ms: number): void {
    if (this.shutting || this.held) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const id = this.keyString(key);
    const at = this.clock.now() + ms;
    const prev = this.delayed.get(id);
    if (prev !== undefined && prev.at <= at) return;
    const entry: DelayedEntry<K> = { key, id, at, seq: this.delayedSeq++ };
    this.delayed.set(id, entry); // a superseded entry stays in the heap and is skipped later
    this.heap.push(entry);
    // Rebuilt from the live entries once superseded ones outnumber them: a key whose delay keeps
    // alternating between long and short (a re-check in an hour, then a retry in a millisecond)
    // would otherwise leave one entry per turn until its hour passes (client-go updates the entry
    // in place instead, heap.Fix in util/workqueue/delaying_queue.go).
    if (this.heap.size > 2 * this.delayed.size + 64) this.compactDelayed();
    this.armTimer();
  }

  /** Entries in the delayed heap, superseded ones included (tests, debugging). */
  delayedHeapSize(): number {
    return this.heap.size;
  }

  private compactDelayed(): void {
    this.heap.clear();
    for (const e of this.delayed.values()) this.heap.push(e);
  }

  /** Adds key after its rate limiter's backoff: the caller's processing of it failed. */
  addRateLimited(key: K): void {
    if (this.shutting || this.held) return;
    this.metrics?.retried();
    this.addAfter(key, this.rateLimiter.when(this.keyString(key)));
  }

  /** Resets key's backoff: the caller processed it successfully (or gave up on it). */
  forget(key: K): void {
    this.rateLimiter.forget(this.keyString(key));
  }

  /** How many times key went through addRateLimited since it was last forgotten. */
  numRequeues(key: K): number {
    return this.rateLimiter.numRequeues(this.keyString(key));
  }

  /**
   * The next key to work on; the caller owns it until done(key). Resolves undefined once the
   * queue is shut down, or, after shutDownWithDrain, once no key is left to hand out.
   */
  get(): Promise<K | undefined> {
    if (this.shutting && !this.drain) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.take(key));
    if (this.shutting) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Ends the processing of key; if it was added meanwhile, it is queued again now. */
  done(key: K): void {
    const id = this.keyString(key);
    if (!this.processing.delete(id)) return;
    this.metrics?.done(id);
    const again = this.dirty.get(id);
    if (again !== undefined) this.enqueue(again);
    if (this.shutting && this.processing.size === 0) {
      if (!this.drain || this.queue.length === 0) this.metrics?.stop();
      // Checked a microtask later: a draining worker that calls get() right after done() picks up
      // the next queued key first, and the drain is not declared over in between.
      if (this.drainWaiters.length > 0) queueMicrotask(() => this.settleDrain());
    }
  }

  /**
   * Until release(), adds of any kind are ignored, and what was queued or delayed is dropped. For a
   * controller that queues its own start-up keys when its workers start (ControllerOptions.startKeys):
   * on a standby replica the informers' handlers keep running, for the loop's indexes and what it
   * observes, and would otherwise queue a key for every object that ever changed (a deleted one's
   * included) for a leader that may never come.
   */
  hold(): void {
    if (this.processing.size > 0) throw new Error(`work queue ${this.name}: hold() while keys are being processed`);
    this.held = true;
    this.dirty.clear();
    this.queue.clear();
    this.timer?.cancel();
    this.timer = undefined;
    this.delayed.clear();
    this.heap.clear();
    this.metrics?.dropped();
  }

  /** Ends hold(): adds count again. */
  release(): void {
    this.held = false;
  }

  /** Whether adds are ignored until release() (hold). */
  isHeld(): boolean {
    return this.held;
  }

  /** Keys waiting to be handed out (excluding delayed adds and keys re-added while processing). */
  len(): number {
    return this.queue.length;
  }

  shuttingDown(): boolean {
    return this.shutting;
  }

  /**
   * Stops the queue at once: adds are ignored, pending delayed adds dropped, and get() resolves
   * undefined from now on. Also ends a pending shutDownWithDrain without waiting further.
   */
  shutDown(): void {
    this.drain = false;
    this.beginShutdown();
    if (this.processing.size === 0) this.metrics?.stop(); // in case a drain had kept it running
    this.settleDrain();
  }

  /**
   * Stops accepting keys, lets workers take what is still queued, and resolves once no key is
   * being processed any more.
   */
  async shutDownWithDrain(): Promise<void> {
    this.drain = true;
    this.beginShutdown();
    if (this.processing.size === 0) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  private beginShutdown(): void {
    if (this.shutting) return;
    this.shutting = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.delayed.clear();
    this.heap.clear();
    // Idle workers are waiting only because nothing is queued: release them.
    for (const g of this.getters.splice(0)) g(undefined);
    if (this.processing.size === 0 && (!this.drain || this.queue.length === 0)) this.metrics?.stop();
  }

  private settleDrain(): void {
    if (this.drain && this.processing.size > 0) return;
    for (const w of this.drainWaiters.splice(0)) w();
  }

  /** Hands key straight to a waiting worker, or queues it. */
  private enqueue(key: K): void {
    const getter = this.getters.shift();
    if (getter) getter(this.take(key));
    else this.queue.push(key);
  }

  private take(key: K): K {
    const id = this.keyString(key);
    const latest = this.dirty.get(id) ?? key;
    this.dirty.delete(id);
    this.processing.add(id);
    this.metrics?.taken(id);
    return latest;
  }

  /** Drops superseded heap entries and returns the earliest live delayed add, if any. */
  private peekDelayed(): DelayedEntry<K> | undefined {
    for (let e = this.heap.peek(); e !== undefined; e = this.heap.peek()) {
      if (this.delayed.get(e.id) === e) return e;
      this.heap.pop();
    }
    return undefined;
  }

  private armTimer(): void {
    const next = this.peekDelayed();
    if (next === undefined || (this.timer !== undefined && this.timer.at <= next.at)) return;
    this.timer?.cancel();
    this.timer = {
      at: next.at,
      cancel: this.clock.setTimeout(() => {
        this.timer = undefined;
        this.flushDelayed();
      }, next.at - this.clock.now()),
    };
  }

  private flushDelayed(): void {
    const now = this.clock.now();
    for (let e = this.peekDelayed(); e !== undefined && e.at <= now; e = this.peekDelayed()) {
      this.heap.pop();
      this.delayed.delete(e.id);
      this.add(e.key);
    }
    // A timer may fire a hair early by this clock's reading; then it is simply armed again.
    this.armTimer();
  }
}

interface DelayedEntry<K> {
  key: K;
  id: string;
  at: number;
  seq: number;
}
