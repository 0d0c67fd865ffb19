import type { KubeObject } from '@topovol/shared';

function rvNumber(o: KubeObject | undefined): bigint {
  try {
    return BigInt(o?.metadata?.resourceVersion ?? '0');
  } catch {
    return 0n;
  }
}

/** Whether `a` is a later version than `b` (by resourceVersion; anything is newer than nothing). */
export function isNewer(a: KubeObject, b: KubeObject | undefined): boolean {
  return b === undefined || rvNumber(a) > rvNumber(b);
}

/**
 * Our own writes, remembered until the informer catches up (as the scheduler's assume cache).
 * Without it, a second worker would read the pre-write cache and pick a volume we just bound; the
 * resourceVersion precondition would still stop it, but only after a wasted conflict.
 */
export class AssumeCache<T extends KubeObject> {
  private readonly assumed = new Map<string, T>();

  /**
   * `onAssume` sees each write as it is remembered, `onForget` each key whose write is dropped (to
   * keep an index on the newest copy: ours, then the informer's again).
   */
  constructor(private readonly hooks: { onAssume?: (obj: T) => void; onForget?: (key: string) => void } = {}) {}

  assume(key: string, obj: T): void {
    this.assumed.set(key, obj);
    this.hooks.onAssume?.(obj);
  }

  /**
   * The newer of the informer's object and our written one. Nothing when the informer has nothing:
   * the binder writes only objects the informer showed, so one it no longer has was deleted, even
   * if our write's answer was stored after the delete event (as the scheduler's assume cache
   * assumes only objects its informer has: k8s.io/kubernetes pkg/scheduler/util/assumecache).
   */
  get(key: string, cached: T | undefined): T | undefined {
    const mine = this.assumed.get(key);
    if (!mine) return cached;
    if (!cached) {
      this.assumed.delete(key);
      return undefined;
    }
    if (rvNumber(cached) >= rvNumber(mine)) {
      this.assumed.delete(key);
      return cached;
    }
    return mine;
  }

  forget(key: string): void {
    if (this.assumed.delete(key)) this.hooks.onForget?.(key);
  }
}
