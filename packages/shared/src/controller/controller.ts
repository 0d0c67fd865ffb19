import { randomUUID } from 'node:crypto';
import { classifyError } from '../client/errors.js';
import { errorMessage, logger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { counter, exponentialBuckets, gauge, histogram } from '../metrics/registry.js';
import { WorkQueue } from '../workqueue/work-queue.js';
import type { RateLimiter } from '../ratelimit/item-backoff.js';
import { realClock } from '../ratelimit/clock.js';
import type { Cancel, Clock } from '../ratelimit/clock.js';
import { isTerminalError } from './terminal-error.js';

export interface ReconcileContext {
  controller: string;
  reconcileId: string;
  /** A child logger carrying controller, key and reconcileID. */
  log: Logger;
  /** Aborted when the manager gives up waiting for in-flight reconciles at shutdown. */
  signal: AbortSignal;
}

/**
 * Brings the world in line with the desired state of one key. Returns a delay in ms to be called
 * again after (periodic re-checks), nothing when done, or throws to be retried with backoff.
 */
export type ReconcileFunc = (ctx: ReconcileContext, key: string) => Promise<number | void>;

export interface ControllerOptions {
  workers?: number;
  rateLimiter?: RateLimiter<string>;
  /** For tests: drive delays with a FakeClock. */
  clock?: Clock;
  /** Which keys are handed to workers first (WorkQueueOptions.priority). */
  priority?: (key: string) => number;
}

// controller-runtime's metric names, so existing dashboards and alerts work unchanged.
const reconcileTotal = counter<'controller' | 'result'>({
  name: 'controller_runtime_reconcile_total',
  help: 'Total number of reconciliations per controller, by result (success, error, requeue_after).',
  labelNames: ['controller', 'result'],
});
const reconcileErrors = counter<'controller'>({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Total number of reconciliation errors per controller.',
  labelNames: ['controller'],
});
const terminalErrors = counter<'controller'>({
  name: 'controller_runtime_terminal_reconcile_errors_total',
  help: 'Total number of terminal (not retried) reconciliation errors per controller.',
  labelNames: ['controller'],
});
const reconcileTime = histogram<'controller'>({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Length of time per reconciliation per controller.',
  labelNames: ['controller'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60].concat(exponentialBuckets(90, 2, 3)),
});
const activeWorkers = gauge<'controller'>({
  name: 'controller_runtime_active_workers',
  help: 'Number of currently used workers per controller.',
  labelNames: ['controller'],
});
const maxConcurrent = gauge<'controller'>({
  name: 'controller_runtime_max_concurrent_reconciles',
  help: 'Maximum number of concurrent reconciles per controller.',
  labelNames: ['controller'],
});

/**
 * A work queue plus N workers calling one reconcile function. Keys go in through enqueue (from
 * informer handlers); the queue guarantees a key is never reconciled by two workers at once.
 */
export class Controller {
  readonly queue: WorkQueue<string>;
  readonly log: Logger;
  private readonly workers: number;
  private readonly abort = new AbortController();
  private readonly clock: Clock;
  private running?: Promise<void>;
  private resync?: { periodMs: number; keys: () => Iterable<string> };
  private cancelResync?: Cancel;

  constructor(
    readonly name: string,
    private readonly reconcile: ReconcileFunc,
    opts: ControllerOptions = {},
  ) {
    this.workers = Math.max(1, opts.workers ?? 1);
    this.clock = opts.clock ?? realClock;
    this.queue = new WorkQueue<string>(name, { rateLimiter: opts.rateLimiter, clock: opts.clock, ...(opts.priority ? { priority: opts.priority } : {}) });
    this.log = logger().child({ controller: name });
    maxConcurrent.set({ controller: name }, this.workers);
    activeWorkers.set({ controller: name }, 0);
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  enqueueAfter(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  /**
   * While the workers run, add every key of `keys()` to the queue every `periodMs` (a non-positive
   * period: never). Level-triggered loops need it where the world changes without an event they
   * watch, as upstream's binder re-syncs every claim and volume (--pvclaimbinder-sync-period).
   * Keys already queued are not added twice.
   */
  resyncEvery(periodMs: number, keys: () => Iterable<string>): void {
    this.resync = periodMs > 0 ? { periodMs, keys } : undefined;
  }

  private scheduleResync(): void {
    const r = this.resync;
    if (!r || this.queue.shuttingDown()) return;
    this.cancelResync = this.clock.setTimeout(() => {
      for (const k of r.keys()) this.queue.add(k);
      this.scheduleResync();
    }, r.periodMs);
  }

  /** Starts the workers; resolves once they all stopped (after shutdown). */
  start(): Promise<void> {
    if (!this.running) {
      this.running = Promise.all(Array.from({ length: this.workers }, () => this.worker())).then(() => undefined);
      this.scheduleResync();
      this.log.info('workers started', { workers: this.workers, resyncPeriodMs: this.resync?.periodMs });
    }
    return this.running;
  }

  get started(): boolean {
    return this.running !== undefined;
  }

  /**
   * Stops taking new keys and waits for in-flight reconciles; after timeoutMs their signal is
   * aborted and we stop waiting (a reconcile that ignores its signal is abandoned).
   */
  async shutdown(timeoutMs: number): Promise<boolean> {
    this.cancelResync?.();
    const drained = this.queue.shutDownWithDrain().then(() => this.running);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([drained.then(() => 'drained' as const), timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.abort.abort(new Error('shutdown timeout'));
      this.queue.shutDown();
      this.log.warn('shutdown timeout: abandoning in-flight reconciles', { timeoutMs });
      return false;
    }
    return true;
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      activeWorkers.inc({ controller: this.name });
      try {
        await this.processOne(key);
      } finally {
        activeWorkers.dec({ controller: this.name });
        this.queue.done(key);
      }
    }
  }

  private async processOne(key: string): Promise<void> {
    const reconcileId = randomUUID();
    const log = this.log.child({ key, reconcileID: reconcileId });
    const end = reconcileTime.startTimer({ controller: this.name });
    try {
      const after = await this.reconcile({ controller: this.name, reconcileId, log, signal: this.abort.signal }, key);
      this.queue.forget(key);
      if (typeof after === 'number' && after > 0) {
        this.queue.addAfter(key, after);
        reconcileTotal.inc({ controller: this.name, result: 'requeue_after' });
      } else {
        reconcileTotal.inc({ controller: this.name, result: 'success' });
      }
    } catch (err) {
      reconcileErrors.inc({ controller: this.name });
      reconcileTotal.inc({ controller: this.name, result: 'error' });
      if (isTerminalError(err)) {
        terminalErrors.inc({ controller: this.name });
        this.queue.forget(key);
        log.error('reconcile failed permanently; not retrying', { error: errorMessage(err) });
        return;
      }
      const c = classifyError(err);
      // The server told us when to come back (429 Retry-After): that wins over our own backoff.
      if (c.retryAfterSeconds !== undefined && c.retryAfterSeconds > 0) this.queue.addAfter(key, c.retryAfterSeconds * 1000);
      else this.queue.addRateLimited(key);
      log.warn('reconcile failed; will retry', { error: c.message, errorKind: c.kind, retries: this.queue.numRequeues(key) });
    } finally {
      end();
    }
  }
}
