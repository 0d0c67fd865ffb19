import type { KubeClient } from '../client/kube-client.js';
import { errorMessage, logger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { IndexedCache } from './indexed-cache.js';
import type { IndexFunc } from './indexed-cache.js';
import type { KubeObject } from './object-key.js';
import { objectKey } from './object-key.js';
import { collectionPath, describeItem, resourceLabel } from './resources.js';
import type { ResourceType } from './resources.js';
import { streamWatch } from './watch-stream.js';
import { listPages, PageSizer } from '../client/paged-list.js';
import { sameCut } from '../client/without-managed-fields.js';
import type { ManagedFieldsCut } from '../client/without-managed-fields.js';
import type { WatchEvent } from './watch-stream.js';
import { cachedObjects, cacheErrors, handlerErrors, relists, watchRestarts } from './informer-metrics.js';
import { dropManagedFields } from './projections.js';
import { runListWatch } from './list-watch-loop.js';
import type { WatchOutcome } from './list-watch-loop.js';
import { watchErrorOutcome } from './watch-error.js';
import type { WatchErrorStatus } from './watch-error.js';

export type { EventHandler, InformerOptions, RawObserver, RawObserverOptions } from './informer-types.js';
import type { EventHandler, InformerOptions, RawObserver, RawObserverOptions } from './informer-types.js';
import { RawObservers } from './raw-observers.js';

/**
 * Objects per list page. client-go's reflector lists from the watch cache in one response at
 * start-up (resourceVersion "0"); a consistent list is paged, and with pages of 500 a cache of
 * 100,000 volumes took 4.2-4.6 s to fill on the bench machine, against 1.8 s with pages of 5,000
 * (1.75 s unpaged). Pages stay bounded so one list answer never holds every object at once, and
 * within LIST_PAGE_MAX_BYTES whatever the objects' writers made of them (PageSizer).
 */
export const DEFAULT_LIST_PAGE_SIZE = 5000;

/** Orders the starts and ends of lists across every informer of the process (see listedAfter). */
let listSequence = 0;

/** A point in the order of lists: Informer.listedSince(mark) says whether a list asked for after it is in. */
export function listOrderMark(): number {
  return ++listSequence;
}

/**
 * List+watch of one resource into an indexed cache. Unlike client-node's ListWatch, it never gives
 * up (runListWatch): a watch that ends is opened again from the last resourceVersion, and 410 Gone,
 * an expired continue token or a watch error other than 429 (watchErrorOutcome) leads to a full
 * relist that reconciles the cache.
 */
export class Informer<T extends KubeObject = KubeObject> {
  readonly cache = new IndexedCache<T>();
  private readonly handlers: EventHandler<T>[] = [];
  private readonly rawObservers = new RawObservers<T>();
  /** addRawObserver ended the watch to open it again: not a failure. */
  private reopenWatch = false;
  private readonly log: Logger;
  /** `plural` or `plural.group`, as in log lines and readiness messages. */
  readonly label: string;
  private abort?: AbortController;
  private synced = false;
  /** A list has completed before: the next one follows a gap in the history. */
  private listed = false;
  /** Page sizes carry over from one list to the next, so a relist does not cut the same pages again. */
  private readonly pages: PageSizer;
  private syncWaiters: (() => void)[] = [];
  private resourceVersion = '';
  private running?: Promise<void>;
  /** listSequence when the list the cache now reflects was asked for, and when it was in (0: none yet). */
  private listAskedAt = 0;
  private listDoneAt = 0;
  /** relist() was called: list again instead of (or before) the next watch. */
  private relistWanted = false;
  private watchAbort?: AbortController;

  constructor(
    private readonly client: KubeClient,
    readonly resource: ResourceType,
    private readonly opts: InformerOptions<T> = {},
  ) {
    this.label = resourceLabel(resource);
    // At 0 from the start: a series born at 1 shows no increase, and its first error would never alert.
    handlerErrors.inc({ resource: this.label }, 0);
    this.log = logger().child({ informer: this.label });
    this.pages = new PageSizer(opts.pageSize ?? DEFAULT_LIST_PAGE_SIZE, opts.pageBytes);
  }

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
    // Late subscribers see the current contents, as client-go's AddEventHandler does.
    if (this.synced) for (const o of this.cache.list()) this.safely(() => h.onAdd?.(o));
  }

  /** Observes objects as listed or watched, before projection (RawObserver). */
  addRawObserver(fn: RawObserver<T>, opts: RawObserverOptions = {}): void {
    // The open watch, if any, was parsed as the observers before this one allowed.
    const watchCut = this.watchAbort !== undefined ? this.cut(false) : undefined;
    this.rawObservers.add(fn, opts);
    // A watch opened without managedFields this observer reads: open it again with them, from the
    // last event applied (its events meanwhile are not applied: see watchOnce).
    if (watchCut !== undefined && !sameCut(watchCut, this.cut(false))) {
      this.reopenWatch = true;
      this.watchAbort?.abort();
    }
  }

  /** Which answers of this list (`listing`) or watch may be parsed without managedFields (RawObservers). */
  private cut(listing: boolean): ManagedFieldsCut {
    return this.rawObservers.cut(listing, this.cache.size === 0);
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    this.cache.addIndex(name, fn);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** The resourceVersion of the last list or event the cache reflects. */
  lastResourceVersion(): string {
    return this.resourceVersion;
  }

  /**
   * Whether the list this cache now reflects was asked for after `other`'s last list was in (false
   * while either has not listed). While a list's events are delivered it already counts as the
   * current one, though the cache is only partly replaced: a handler may rely on the object it was
   * given, not on the rest of the cache. Lists here are consistent reads (no resourceVersion), so this
   * cache's contents, and every event after them, are no older than the state `other` listed: what
   * `other`'s watch has delivered since covers the whole time this cache's objects describe.
   * Objects of different resources have no comparable resourceVersions (KEP-5504 orders one
   * resource's only), so this order of the requests is what relates the two.
   */
  listedAfter(other: Informer<KubeObject>): boolean {
    return other.listDoneAt > 0 && this.listAskedAt > other.listDoneAt;
  }

  /** Whether the cache reflects a list asked for after `mark` (listOrderMark), its events delivered or being delivered. */
  listedSince(mark: number): boolean {
    return this.listAskedAt > mark;
  }

  /** listSequence when the last list was in (0: none yet): changes with every list. */
  lastListDone(): number {
    return this.listDoneAt;
  }

  /**
   * Lists again now: the current watch is ended and the cache replaced by a fresh list (handlers see
   * onRelist, then the differences). For a loop that needs this cache listed after another's
   * (listedAfter).
   */
  relist(): void {
    this.relistWanted = true;
    this.watchAbort?.abort();
  }

  /** Test seam: the next watch resumes from this resourceVersion (e.g. one the server expired). */
  resumeFromForTest(resourceVersion: string): void {
    this.resourceVersion = resourceVersion;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      // The abort listener goes once the sync comes, so repeated waits on one signal do not pile up.
      const onAbort = (): void => reject(new Error(`${this.label} informer: sync aborted`));
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  start(): void {
    if (this.running) return;
    this.abort = new AbortController();
    this.running = this.run(this.abort.signal);
  }

  async stop(): Promise<void> {
    this.abort?.abort();
    await this.running;
    this.running = undefined;
  }

  private run(signal: AbortSignal): Promise<void> {
    return runListWatch(signal, {
      backoff: this.opts.backoff,
      takeRelistRequest: () => {
        const wanted = this.relistWanted;
        this.relistWanted = false;
        return wanted;
      },
      relistRequested: () => this.relistWanted,
      interrupted: () => this.interrupted(),
      list: (s) => this.listAndReplace(s),
      watch: (s) => this.watchOnce(s),
      restarted: (reason) => watchRestarts.inc({ resource: this.label, reason }),
      failed: (kind, message, retryInMs) => this.log.warn('list/watch failed; retrying', { error: message, kind, retryInMs }),
    });
  }

  /** relist() or addRawObserver ended the watch: go on at once (list, or watch again), no failure. */
  private interrupted(): boolean {
    const reopen = this.reopenWatch;
    this.reopenWatch = false;
    return this.relistWanted || reopen;
  }

  private async listAndReplace(signal: AbortSignal): Promise<void> {
    relists.inc({ resource: this.label });
    const askedAt = ++listSequence;
    const listed = new Map<string, T>();
    const query = { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector };
    /** Listed, but not cacheable: what the cache has of them stays (not taken as deleted). */
    const skipped = new Set<string>();
    const withoutManagedFields = this.cut(true);
    const rv = await listPages(this.client, collectionPath(this.resource, this.opts.namespace), query, this.pages, this.label, (items) => {
      // An observer that reads managedFields this list was asked for without came after it: the
      // observers see its objects in the list asked for next.
      const observe = this.rawObservers.size > 0 && sameCut(withoutManagedFields, this.cut(true));
      if (this.rawObservers.size > 0 && !observe) this.relist();
      for (const raw of items) {
        const item = describeItem(this.resource, raw);
        if (observe) this.observeRaw(item);
        const obj = this.attempt(item, 'listed', () => this.project(item));
        if (obj.ok) listed.set(objectKey(obj.value), obj.value);
        else skipped.add(objectKey(item));
      }
    }, { signal, withoutManagedFields });

    // The list's place in the order of lists (listedAfter) holds from here on, before any handler
    // runs: one acting on the list's events, or on the gap, must see this list as the current one.
    this.listAskedAt = askedAt;
    this.listDoneAt = ++listSequence;
    // After the pages (handlers kept acting on the old cache while they came), before the list's
    // own events: what a handler concluded from the history before the gap is dropped in one place.
    if (this.listed) this.emit((h) => h.onRelist?.());
    this.listed = true;
    // Reconcile the cache with the list: what vanished while we were not watching is a delete.
    for (const key of this.cache.keys()) {
      if (!listed.has(key) && !skipped.has(key)) {
        const old = this.cache.remove(key)!;
        this.emit((h) => h.onDelete?.(old));
      }
    }
    for (const obj of listed.values()) {
      const stored = this.attempt(obj, 'listed', () => this.cache.upsert(obj));
      if (!stored.ok) continue;
      const old = stored.value;
      if (!old) this.emit((h) => h.onAdd?.(obj));
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit((h) => h.onUpdate?.(old, obj));
    }
    this.resourceVersion = rv;
    cachedObjects.set({ resource: this.label }, this.cache.size);
    if (!this.synced) {
      this.synced = true;
      this.log.debug('cache synced', { objects: this.cache.size, resourceVersion: rv });
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** One watch request; 'relist' when a list must follow (why: our resourceVersion too old, 'gone', or another error event, 'error'). */
  private async watchOnce(signal: AbortSignal): Promise<WatchOutcome> {
    await this.client.limiter.wait(signal);
    if (this.relistWanted) return { kind: 'closed', events: 0 };
    let relist: 'gone' | 'error' | undefined;
    let failure: unknown;
    const inner = new AbortController();
    this.watchAbort = inner;
    const cut = this.cut(false);
    const onAbort = (): void => inner.abort();
    signal.addEventListener('abort', onAbort);
    // Spread watch lengths so many informers do not all reconnect at once (as client-go: 5-10 min).
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    const query: Record<string, string> = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(timeoutSeconds),
    };
    if (this.opts.labelSelector) query.labelSelector = this.opts.labelSelector;
    if (this.opts.fieldSelector) query.fieldSelector = this.opts.fieldSelector;
    let events = 0;
    try {
      events = await streamWatch(
        this.client,
        collectionPath(this.resource, this.opts.namespace),
        query,
        (e) => {
          if (relist || failure) return;
          // Parsed without managedFields an observer added since reads: not applied, so the next
          // watch (addRawObserver ends this one) delivers it again, from the last one applied.
          if (!sameCut(cut, this.cut(false))) return;
          try {
            const applied = this.apply(e);
            if (applied !== 'ok') {
              relist = applied;
              inner.abort();
            }
          } catch (err) {
            failure = err;
            inner.abort();
          }
        },
        inner.signal,
        (timeoutSeconds + 60) * 1000,
        { withoutManagedFields: cut },
      );
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.watchAbort = undefined;
    }
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error('watch event handling failed');
    return relist ? { kind: 'relist', why: relist } : { kind: 'closed', events };
  }

  private apply(e: WatchEvent): 'ok' | 'gone' | 'error' {
    if (e.type === 'ERROR') {
      const status = e.object as WatchErrorStatus;
      const outcome = watchErrorOutcome(status);
      if (outcome === 'rewatch') throw new Error(`watch error: ${status.message ?? JSON.stringify(status)}`);
      if (outcome === 'relist') this.log.warn('watch ended with an error; listing again', { error: status.message ?? JSON.stringify(status), code: status.code });
      return outcome === 'gone' ? 'gone' : 'error';
    }
    const raw = e.object as KubeObject;
    const rv = raw.metadata?.resourceVersion;
    if (e.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return 'ok';
    }
    if (e.type === 'DELETED') {
      // By key, which needs no projection: a deleted object leaves the cache whatever it held.
      const old = this.cache.remove(objectKey(raw));
      const last = old ? { ok: true as const, value: old } : this.attempt(raw, 'DELETED', () => this.project(raw));
      if (last.ok) this.emit((h) => h.onDelete?.(last.value));
    } else {
      if (this.rawObservers.size > 0) this.observeRaw(raw);
      const stored = this.attempt(raw, e.type, () => {
        const obj = this.project(raw);
        return { obj, old: this.cache.upsert(obj) };
      });
      if (stored.ok) {
        const { obj, old } = stored.value;
        if (old) this.emit((h) => h.onUpdate?.(old, obj));
        else this.emit((h) => h.onAdd?.(obj));
      }
    }
    if (rv) this.resourceVersion = rv;
    cachedObjects.set({ resource: this.label }, this.cache.size);
    return 'ok';
  }

  /**
   * Projects or caches one object. One that our projection or an index cannot take must not stop
   * the resource's later events (a watch resumed before it would fail on it again, for ever) nor its
   * lists: it is skipped, said and counted, and the cache keeps what it had of it, as client-go's
   * reflector hands a store error to HandleError and goes on.
   */
  private attempt<R>(raw: KubeObject, what: string, fn: () => R): { ok: true; value: R } | { ok: false } {
    try {
      return { ok: true, value: fn() };
    } catch (err) {
      cacheErrors.inc({ resource: this.label });
      this.log.error('object could not be cached; skipped', { from: what, object: objectKey(raw), resourceVersion: raw.metadata?.resourceVersion, error: errorMessage(err) });
      return { ok: false };
    }
  }

  private observeRaw(raw: KubeObject): void {
    const cached = this.cache.get(objectKey(raw));
    this.rawObservers.observe(raw, cached, (fn) => this.safely(fn));
  }

  private project(raw: KubeObject): T {
    return this.opts.transform ? this.opts.transform(raw) : (dropManagedFields(raw) as T);
  }

  private emit(fn: (h: EventHandler<T>) => void): void {
    for (const h of this.handlers) this.safely(() => fn(h));
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      // Not rethrown: one handler's bug must not stop the cache or the other handlers (client-go
      // crashes the process instead, and relists on restart); counted, so that it is seen.
      handlerErrors.inc({ resource: this.label });
      this.log.error('event handler failed', { error: errorMessage(err) });
    }
  }
}
