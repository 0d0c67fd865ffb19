import type { KubeObject } from './object-key.js';
import { objectKey } from './object-key.js';

/** Maps an object to the index values it is filed under (several values allowed, as client-go). */
export type IndexFunc<T> = (obj: T) => string[];

/**
 * The informer's store: objects by key plus named secondary indexes kept in step on every write,
 * so controllers ask "PVs of class X" or "pods using claim Y" without scanning.
 */
export class IndexedCache<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  /**
   * Adds a named index. Loops sharing an informer may each add the same index, as the same function
   * (a module function, not a closure made per set-up): that is a no-op. A name reused for any other
   * function is refused, as client-go's AddIndexers refuses a conflicting name, since the first
   * definition would silently answer the second loop's questions. Functions are told apart by
   * identity only: two closures with the same text may capture different values.
   */
  addIndex(name: string, fn: IndexFunc<T>): void {
    const existing = this.indexers.get(name);
    if (existing) {
      if (existing !== fn) throw new Error(`index "${name}" is already defined by a different function (pass the same function, or choose another name)`);
      return;
    }
    this.indexers.set(name, fn);
    const idx = new Map<string, Set<string>>();
    this.indexes.set(name, idx);
    for (const [key, obj] of this.items) this.fileUnder(idx, fn(obj), key);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  /** Objects filed under `value` in index `name`. */
  byIndex(name: string, value: string): T[] {
    const idx = this.indexes.get(name);
    if (!idx) throw new Error(`no index named ${name}`);
    const keys = idx.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.items.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  /** Distinct values present in an index (e.g. all storage classes that have PVs). */
  indexValues(name: string): string[] {
    const idx = this.indexes.get(name);
    if (!idx) throw new Error(`no index named ${name}`);
    return [...idx.keys()];
  }

  /**
   * Stores obj and returns the previous version. All or nothing: an index function that throws on
   * obj leaves the cache as it was (its index values are computed before anything changes).
   */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const values = [...this.indexers].map(([name, fn]) => [this.indexes.get(name)!, fn(obj)] as const);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    for (const [idx, v] of values) this.fileUnder(idx, v, key);
    return old;
  }

  /** Removes the object under key and returns it. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  private fileUnder(idx: Map<string, Set<string>>, values: string[], key: string): void {
    for (const v of values) {
      let set = idx.get(v);
      if (!set) idx.set(v, (set = new Set()));
      set.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const v of fn(obj)) {
        const set = idx.get(v);
        if (!set) continue;
        set.delete(key);
        if (set.size === 0) idx.delete(v);
      }
    }
  }
}
