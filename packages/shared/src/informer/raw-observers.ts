import type { KubeObject } from './object-key.js';
import type { RawObserver, RawObserverOptions } from './informer-types.js';
import type { ManagedFieldsCut } from '../client/without-managed-fields.js';

/** Manager names found verbatim in an answer's text: what kube-apiserver writes unescaped (cutManagedFields). */
const PLAIN_NAME = /^[A-Za-z0-9._:/ -]+$/;

/**
 * An informer's raw observers, and what they read of managedFields: so which answers it may parse
 * without them (withoutManagedFields): every one while no observer reads them; with an observer of
 * cached objects' only, a list while nothing is cached (an informer's first); otherwise those that
 * name none of the managers the observers read (every one when one of them reads every manager's).
 */
export class RawObservers<T> {
  private readonly fns: RawObserver<T>[] = [];
  private read: RawObserverOptions['managedFields'];
  /** The managers whose entries the observers read; undefined once one reads every manager's. */
  private managers: string[] | undefined = [];

  add(fn: RawObserver<T>, opts: RawObserverOptions): void {
    this.fns.push(fn);
    if (opts.managedFields === 'all') this.read = 'all';
    else if (opts.managedFields === 'cached' && this.read !== 'all') this.read = 'cached';
    if (opts.managedFields === undefined) return;
    const named = opts.managers;
    // A name that might be written escaped could be missed in the text: read every manager's then.
    if (!named || named.length === 0 || !named.every((n) => PLAIN_NAME.test(n))) this.managers = undefined;
    else if (this.managers) this.managers = [...new Set([...this.managers, ...named])].sort();
  }

  get size(): number {
    return this.fns.length;
  }

  /** Which answers of a list (`listing`) or a watch may be parsed without managedFields, the cache being empty or not. */
  cut(listing: boolean, cacheEmpty: boolean): ManagedFieldsCut {
    if (this.read === undefined) return true;
    if (this.read === 'cached' && listing && cacheEmpty) return true;
    return this.managers ? { unlessNaming: this.managers } : false;
  }

  /** Hands each observer the object and the cached copy it replaces, each call through `safely`. */
  observe(raw: KubeObject, cached: T | undefined, safely: (fn: () => void) => void): void {
    for (const fn of this.fns) safely(() => fn(raw, cached));
  }
}
