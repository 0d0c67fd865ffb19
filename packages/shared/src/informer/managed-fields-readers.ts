import type { RawObserverOptions } from './informer-types.js';

/**
 * What an informer's raw observers read of managedFields, and so which answers it may parse
 * without them (withoutManagedFields): every one while no observer reads them; with an observer of
 * cached objects' only, a list while nothing is cached (an informer's first); otherwise none.
 */
export class ManagedFieldsReaders {
  private read: RawObserverOptions['managedFields'];

  /** Adds one observer's need. */
  add(opts: RawObserverOptions): void {
    if (opts.managedFields === 'all') this.read = 'all';
    else if (opts.managedFields === 'cached' && this.read !== 'all') this.read = 'cached';
  }

  /** Whether a list (`listing`) or a watch may be parsed without them, the cache being empty or not. */
  mayCut(listing: boolean, cacheEmpty: boolean): boolean {
    if (this.read === undefined) return true;
    return this.read === 'cached' && listing && cacheEmpty;
  }
}
