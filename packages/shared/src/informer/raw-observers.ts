import type { KubeObject } from './object-key.js';
import type { RawObserver, RawObserverOptions } from './informer-types.js';

/**
 * An informer's raw observers, and what they read of managedFields: so which answers it may parse
 * without them (withoutManagedFields): every one while no observer reads them; with an observer of
 * cached objects' only, a list while nothing is cached (an informer's first); otherwise none.
 */
export class RawObservers<T> {
  private readonly fns: RawObserver<T>[] = [];
  private read: RawObserverOptions['managedFields'];

  add(fn: RawObserver<T>, opts: RawObserverOptions): void {
    this.fns.push(fn);
    if (opts.managedFields === 'all') this.read = 'all';
    else if (opts.managedFields === 'cached' && this.read !== 'all') this.read = 'cached';
  }

  get size(): number {
    return this.fns.length;
  }

  /** Whether a list (`listing`) or a watch may be parsed without managedFields, the cache being empty or not. */
  mayCut(listing: boolean, cacheEmpty: boolean): boolean {
    if (this.read === undefined) return true;
    return this.read === 'cached' && listing && cacheEmpty;
  }

  /** Hands each observer the object and the cached copy it replaces, each call through `safely`. */
  observe(raw: KubeObject, cached: T | undefined, safely: (fn: () => void) => void): void {
    for (const fn of this.fns) safely(() => fn(raw, cached));
  }
}
