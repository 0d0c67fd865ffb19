/**
 * Paces a Warning a loop would say at every look while the same write keeps being refused: said
 * when its message is new for its key, then again only once `everyMs` passed. The Event recorder's
 * spam filter shares one budget per object between all reasons (a burst, then one per 5 minutes,
 * as client-go's), so a Warning repeated every minute would spend every token it refills and the
 * Events that follow (the rollback's completion) would be dropped.
 */
export class RepeatPacer {
  private readonly said = new Map<string, { message: string; at: number }>();

  constructor(
    private readonly everyMs: number,
    /** Keys remembered at most; the oldest goes first (a key said long ago is due anyway). */
    private readonly max = 4096,
  ) {}

  /** Whether `message` is to be said now for `key`; if so, it is remembered as said at `now`. */
  due(key: string, message: string, now: number): boolean {
    const last = this.said.get(key);
    if (last && last.message === message && now - last.at < this.everyMs) return false;
    this.said.delete(key);
    this.said.set(key, { message, at: now });
    if (this.said.size > this.max) this.said.delete(this.said.keys().next().value!);
    return true;
  }

  get size(): number {
    return this.said.size;
  }
}
