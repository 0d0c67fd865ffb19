/**
 * Since when this process has seen a fact hold, by key: what a grace period counts from when no
 * object on the server records it. The loop's glue keeps it and hands the time to its decisions as
 * a plain input; decisions never write it. Memory only: a restart, or a new leader, sees afresh,
 * which errs on the side of waiting longer.
 */
export class FirstSeen<T> {
  private readonly seen = new Map<string, { value: T; since: number }>();

  get(key: string): { value: T; since: number } | undefined {
    return this.seen.get(key);
  }

  /** `value` seen at `at`; the same value seen before keeps its first time. */
  note(key: string, value: T, at: number): void {
    if (this.seen.get(key)?.value === value) return;
    this.seen.set(key, { value, since: at });
  }

  forget(key: string): void {
    this.seen.delete(key);
  }

  get size(): number {
    return this.seen.size;
  }
}
