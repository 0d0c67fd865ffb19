import type { KubeObject } from './object-key.js';

/**
 * Sees each object as the server sent it (a listed one with its apiVersion and kind set), before the
 * projection, with the cached copy it replaces (undefined for a new one). For what the projection
 * drops and one check needs, without caching it: e.g. which field manager wrote a field. Its
 * managedFields only as RawObserverOptions say.
 */
export type RawObserver<T> = (raw: KubeObject, cached: T | undefined) => void;

export interface RawObserverOptions {
  /**
   * Which objects the observer reads the managedFields of. The informer parses lists and watch
   * events without them (withoutManagedFields) unless an observer reads them: `cached`, only of
   * objects the cache already holds (its first list, with nothing cached, is then parsed without
   * them); `all`, of every object. Absent: none. An observer added after the informer started
   * gets them from the next list or watch event on (docs/adr/0015).
   */
  managedFields?: 'cached' | 'all';
  /**
   * The field managers whose managedFields entries the observer reads: an answer whose text names
   * none of them is parsed without managedFields all the same (it has no entry of theirs). Absent
   * or empty: every manager's. Names of letters, digits and `-._:/ ` only; another reads every
   * manager's.
   */
  managers?: readonly string[];
}

export interface EventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** Called with the last state the cache held. */
  onDelete?(obj: T): void;
  /**
   * A list after the first (the watch's resourceVersion expired, the watch ended with an error other
   * than 429, relist() was asked, or the informer was restarted):
   * events between the last watched one and this list are lost, so what a handler saw is no longer
   * the whole history (an object created and deleted in the gap was never seen). Called once the
   * list's pages are in, before its adds, updates and deletes.
   */
  onRelist?(): void;
}

export interface InformerOptions<T> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Project each object before it is cached, e.g. to keep a few pod fields. It sees managedFields
   * only where a raw observer asked for them (RawObserverOptions); the default drops them.
   */
  transform?: (obj: KubeObject) => T;
  /** Objects per list page at most (default DEFAULT_LIST_PAGE_SIZE). */
  pageSize?: number;
  /** Bytes of one list page's answer at most (default LIST_PAGE_MAX_BYTES); fewer objects are asked for past them. */
  pageBytes?: number;
  /** Retry backoff after a failed list or watch: first wait (jittered up to 2×) and cap. */
  backoff?: { startMs: number; maxMs: number };
}
