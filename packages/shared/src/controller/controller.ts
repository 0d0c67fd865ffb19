import { randomUUID } from 'node:crypto';
import { classifyError, isFenced } from '../client/errors.js';
import { errorMessage, logger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { counter, exponentialBuckets, gauge, histogram } from '../metrics/registry.js';
import type { WorkQueue } from '../workqueue/work-queue.js';
import { realClock } from '../ratelimit/clock.js';
import type { Cancel, Clock } from '../ratelimit/clock.js';
import type { Result } from './result.js';
import type { Runnable } from './runnable.js';
import { waitAtMost } from './runnable.js';
import { isTerminalError } from './terminal-error.js';

export interface ReconcileContext {
  controller: string;
  /** Made when first read. */
  readonly reconcileId: string;
  /** A child logger carrying controller, key (its keyString) and reconcileID; made when first read. */
  readonly log: Logger;
  /** Aborted when the manager gives up waiting for in-flight reconciles at shutdown. */
  signal: AbortSignal;
}

/**
 * Brings the world in line with the desired state of one key (controller-runtime's
 * Reconcile(ctx, Request) (Result, error)): resolves with a Result (a periodic re-check, or done),
 * or throws to be retried with backoff.
 */
export type ReconcileFunc<K> = (ctx: ReconcileContext, key: K) => Promise<Result>;

export interface ControllerOptions<K> {
  /**
   * The loop's queue, built by its setup, which hands it to whatever enqueues (informer handlers,
   * an actuator) before the controller exists, as external-provisioner's capacity controller
   * takes its queue. Name it as the controller: its workqueue_* series carry that name.
   */
  queue: WorkQueue<K>;
  workers?: number;
  /**
   * The keys to reconcile when the workers start, in place of every key added before: the queue is
   * held until then (WorkQueue.hold), so the handlers of a replica that does not lead (or has not
   * synced) queue nothing. controller-runtime starts a controller's event sources in
   * Controller.Start, which replays the caches as Create events; here the handlers must run from the
   * start (they keep the loop's indexes and observations), so the loop says instead which keys its
   * caches call for. They must cover every key its handlers would have queued for the objects
   * cached now; a key of an object already gone is not needed (a level-triggered reconcile of it
   * finds nothing to do). Without startKeys, adds before start are kept, as client-go's queue keeps
   * them.
   */
  startKeys?: () => Iterable<K>;
  /** For tests: drive the re-sync period with a FakeClock (the queue has its own clock). */
  clock?: Clock;
}

/** Re-sync keys added per turn of the event loop. */
const RESYNC_SLICE = 1000;

/** When a key whose write the leader-election fence held is tried again (a retry period of client-go's elector, about). */
export const FENCED_RETRY_MS = 1000;

// controller-runtime's metric names, so existing dashboards and alerts work unchanged.
const reconcileTotal = counter<'controller' | 'result'>({
  name: 'controller_runtime_reconcile_total',
  help: 'Total number of reconciliations per controller, by result (success, error, requeue: a write held by the leader-election fence, requeue_after).',
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
 * N workers calling one reconcile function on the keys of a work queue. Keys go in through the
 * queue (from informer handlers); the queue guarantees a key is never reconciled by two workers at
 * once. Keys are typed (a loop's discriminated union); logs and metrics name a key by the queue's
 * keyString.
 */
export class Controller<K = string> implements Runnable {
  readonly queue: WorkQueue<K>;
  readonly log: Logger;
  private readonly workers: number;
  private readonly abort = new AbortController();
  private readonly clock: Clock;
  private running?: Promise<void>;
  private resync?: { periodMs: number; keys: () => Iterable<K> };
  private readonly startKeys?: () => Iterable<K>;
  private cancelResync?: Cancel;

  constructor(
    readonly name: string,
    private readonly reconcile: ReconcileFunc<K>,
    opts: ControllerOptions<K>,
  ) {
    this.workers = Math.max(1, opts.workers ?? 1);
    this.clock = opts.clock ?? realClock;
    this.queue = opts.queue;
    this.startKeys = opts.startKeys;
    if (this.startKeys) this.queue.hold();
    this.log = logger().child({ controller: name });
    maxConcurrent.set({ controller: name }, this.workers);
    activeWorkers.set({ controller: name }, 0);
  }

  enqueue(key: K): void {
    this.queue.add(key);
  }

  /** Whether its workers run and take keys: on the replica that leads (or runs without election), until it stops. */
  isRunning(): boolean {
    return this.running !== undefined && !this.queue.shuttingDown();
  }

  /**
   * While the workers run, add every key of `keys()` to the queue every `periodMs` (a non-positive
   * period: never). Level-triggered loops need it where the world changes without an event they
   * watch, as upstream's binder re-syncs every claim and volume (--pvclaimbinder-sync-period).
   * Keys already queued are not added twice. `keys()` is walked lazily, a slice per turn of the
   * event loop, so a loop may compute which keys need work as the walk goes.
   */
  resyncEvery(periodMs: number, keys: () => Iterable<K>): void {
    this.resync = periodMs > 0 ? { periodMs, keys } : undefined;
  }

  private scheduleResync(): void {
    const r = this.resync;
    if (!r || this.queue.shuttingDown()) return;
    this.cancelResync = this.clock.setTimeout(() => {
      this.scheduleResync();
      this.addSlicesOf('re-sync', r.keys, RESYNC_SLICE);
    }, r.periodMs);
  }

  private addSlicesOf(walk: 're-sync' | 'start-up', keys: () => Iterable<K>, slice: number): void {
    let it: Iterator<K>;
    try {
      it = keys()[Symbol.iterator]();
    } catch (err) {
      this.log.error(`${walk} walk stopped early`, { error: errorMessage(err), keys: 0 });
      return;
    }
    this.addSlices(walk, it, 0, slice);
  }

  /**
   * Adds a walk's keys `slice` at a time, one slice per turn of the event loop: a re-sync's walk over
   * 100,000 objects (whose keys may be computed as it goes) must not stall watches and workers.
   */
  private addSlices(walk: 're-sync' | 'start-up', keys: Iterator<K>, added: number, slice: number): void {
    for (let i = 0; i < slice; i++) {
      let next: IteratorResult<K>;
      try {
        next = keys.next();
      } catch (err) {
        // A loop's key walk that throws must not take the process down from a timer: this walk
        // ends here and the next period walks again.
        this.log.error(`${walk} walk stopped early`, { error: errorMessage(err), keys: added });
        return;
      }
      if (next.done) {
        this.log.debug(`${walk} walk queued its keys`, { keys: added });
        return;
      }
      this.queue.add(next.value);
      added++;
    }
    if (!this.queue.shuttingDown()) setImmediate(() => this.addSlices(walk, keys, added, slice));
  }

  /**
   * Starts the workers; resolves once they all stopped (after stop). An aborted signal abandons
   * in-flight reconciles at once (their own signal aborts too).
   */
  start(signal?: AbortSignal): Promise<void> {
    if (!this.running) {
      signal?.addEventListener('abort', () => this.halt(), { once: true });
      this.queue.release();
      // The start-up keys all at once, before the first is taken, as the informers' lists queued
      // them before: in the queue's order (a loop's priority), not handed to idle workers one by one
      // as they come, and with no turn of watch events between slices of keys with nothing to do
      // (a new leader's bound claims). A plain walk of the caches: about 0.1 s for 200,000 keys.
      if (this.startKeys) this.addSlicesOf('start-up', this.startKeys, Infinity);
      this.running = Promise.all(Array.from({ length: this.workers }, () => this.worker())).then(() => undefined);
      this.scheduleResync();
      this.log.info('workers started', { workers: this.workers, resyncPeriodMs: this.resync?.periodMs });
    }
    return this.running;
  }

  /**
   * Stops taking keys and waits for in-flight reconciles; after timeoutMs their signal is aborted
   * and we stop waiting (a reconcile that ignores its signal is abandoned). Keys still queued are
   * left, as client-go's ShutDown leaves them (kube-controller-manager's loops stop so): they are
   * level-triggered, so the next leader's start-up list queues them again. Working through them
   * instead kept a binder with a backlog writing until the deadline, abandoning writes midway and
   * holding its Lease all the while. Before start, the queue is simply shut down.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.cancelResync?.();
    this.queue.shutDown();
    if (!this.running) return true;
    const stopped = await waitAtMost(this.running, timeoutMs);
    if (!stopped) {
      this.halt();
      this.log.warn('shutdown timeout: abandoning in-flight reconciles', { timeoutMs });
    }
    return stopped;
  }

  /** Abandons in-flight reconciles: their signal aborts and the workers take no further key. */
  private halt(): void {
    this.cancelResync?.();
    this.abort.abort(new Error('shutdown timeout'));
    this.queue.shutDown();
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

  private async processOne(key: K): Promise<void> {
    const end = reconcileTime.startTimer({ controller: this.name });
    const ctx = this.contextFor(key);
    try {
      const result = await this.reconcile(ctx, key);
      this.queue.forget(key);
      const after = result.requeueAfterMs;
      if (after !== undefined && after > 0) {
        this.queue.addAfter(key, after);
        reconcileTotal.inc({ controller: this.name, result: 'requeue_after' });
      } else {
        reconcileTotal.inc({ controller: this.name, result: 'success' });
      }
    } catch (err) {
      // A write held by the leader-election fence: the Lease's renewal is late, nothing failed.
      // Counted as a requeue, so that no error alert fires for a slow renewal (the fence has its
      // own counter), and tried again after a fixed pause, outside the rate limiter: every key a
      // woken leader takes is held at once, and their retries must not use up the shared retry
      // budget that real errors wait on once the Lease is renewed.
      if (isFenced(err)) {
        reconcileTotal.inc({ controller: this.name, result: 'requeue' });
        this.queue.addAfter(key, FENCED_RETRY_MS);
        ctx.log.info('write held until the lease is renewed; will retry', { error: errorMessage(err), retryInMs: FENCED_RETRY_MS });
        return;
      }
      reconcileErrors.inc({ controller: this.name });
      reconcileTotal.inc({ controller: this.name, result: 'error' });
      if (isTerminalError(err)) {
        terminalErrors.inc({ controller: this.name });
        this.queue.forget(key);
        ctx.log.error('reconcile failed permanently; not retrying', { error: errorMessage(err) });
        return;
      }
      const c = classifyError(err);
      // The server told us when to come back (429 Retry-After): that wins over our own backoff.
      if (c.retryAfterSeconds !== undefined && c.retryAfterSeconds > 0) this.queue.addAfter(key, c.retryAfterSeconds * 1000);
      else this.queue.addRateLimited(key);
      ctx.log.warn('reconcile failed; will retry', { error: c.message, errorKind: c.kind, retries: this.queue.numRequeues(key) });
    } finally {
      end();
    }
  }

  /**
   * A reconcile's context, its id and child logger made when first read: most reconciles of a busy
   * loop (the echoes of its own writes) log nothing, and a UUID and a winston child per reconcile
   * were a few percent of the binder's CPU (hack/bench/README.md).
   */
  private contextFor(key: K): ReconcileContext {
    let reconcileId: string | undefined;
    let log: Logger | undefined;
    const parent = this.log;
    const keyString = (): string => this.queue.keyString(key);
    return {
      controller: this.name,
      signal: this.abort.signal,
      get reconcileId(): string {
        return (reconcileId ??= randomUUID());
      },
      get log(): Logger {
        return (log ??= parent.child({ key: keyString(), reconcileID: this.reconcileId }));
      },
    };
  }
}
