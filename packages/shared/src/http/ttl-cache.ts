/**
 * A map whose entries expire after ttlMs and which keeps at most max of them (the least recently used go first);
 * concurrent loads of one key share one call. A failed load is not kept.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
    private readonly now: () => number,
    private readonly maxLoading = max,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  peek(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expires <= this.now()) return undefined;
    // Used: last to be evicted (a reader scraping all along outlives a flood of one-off tokens).
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }

  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.peek(key);
    if (hit !== undefined) return hit;
    let pending = this.loading.get(key);
    if (!pending) {
      // Distinct keys at once (a flood of made-up tokens) wait on the API server, not in memory.
      if (this.loading.size >= this.maxLoading) throw new Error(`${this.loading.size} reviews already in flight`);
      pending = load().then((v) => {
        this.set(key, v);
        return v;
      });
      const forget = (): void => void this.loading.delete(key);
      pending.then(forget, forget);
      this.loading.set(key, pending);
    }
    return pending;
  }
}
