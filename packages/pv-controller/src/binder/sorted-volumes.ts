interface Entry {
  bytes: bigint;
  name: string;
}

/** Chunks split beyond this many entries, so an insert or a removal moves at most this many. */
const MAX_CHUNK = 512;

/** Orders (bytes, name) pairs as the binder prefers volumes: smaller first, then by name. */
export function compareVolumes(aBytes: bigint, aName: string, bBytes: bigint, bName: string): number {
  if (aBytes !== bBytes) return aBytes < bBytes ? -1 : 1;
  return aName === bName ? 0 : aName < bName ? -1 : 1;
}

/** The first of n positions whose entry is not before the pair: not less (inclusive) or greater (exclusive). */
function firstFrom(n: number, entryAt: (i: number) => Entry, bytes: bigint, name: string, inclusive: boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const e = entryAt(mid);
    const c = compareVolumes(e.bytes, e.name, bytes, name);
    if (c < 0 || (!inclusive && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index in `list` of the first entry not before the pair. */
const bound = (list: Entry[], bytes: bigint, name: string, inclusive: boolean): number => firstFrom(list.length, (i) => list[i]!, bytes, name, inclusive);

const same = (e: Entry, bytes: bigint, name: string): boolean => e.bytes === bytes && e.name === name;

/**
 * Volume names ordered by (capacity in bytes, name): the order the binder prefers them in (the
 * smallest that fits, ties by name), so a match is found by a binary search and a short walk.
 * Entries are kept in sorted chunks of at most MAX_CHUNK: one flat array made every bind of a
 * volume (its removal from the free list) move the whole list, O(N) per event, which was a tenth
 * of the binder's CPU with 100,000 free volumes.
 */
export class SortedVolumes {
  private readonly chunks: Entry[][] = [];
  private count = 0;
  /** Bumped by every change, so that an iteration in progress finds its place again. */
  private version = 0;

  /** `maxChunk` is for tests, which split chunks often with a small one. */
  constructor(private readonly maxChunk = MAX_CHUNK) {}

  get size(): number {
    return this.count;
  }

  insert(bytes: bigint, name: string): void {
    if (this.chunks.length === 0) {
      this.chunks.push([{ bytes, name }]);
      this.changed(1);
      return;
    }
    // Into the first chunk whose last entry is not less than the pair; past them all, the last chunk.
    const c = Math.min(this.chunkAt(bytes, name, true), this.chunks.length - 1);
    const chunk = this.chunks[c]!;
    const i = bound(chunk, bytes, name, true);
    if (i < chunk.length && same(chunk[i]!, bytes, name)) return;
    chunk.splice(i, 0, { bytes, name });
    if (chunk.length > this.maxChunk) this.chunks.splice(c + 1, 0, chunk.splice(this.maxChunk >>> 1));
    this.changed(1);
  }

  remove(bytes: bigint, name: string): void {
    const c = this.chunkAt(bytes, name, true);
    const chunk = this.chunks[c];
    if (!chunk) return;
    const i = bound(chunk, bytes, name, true);
    if (i >= chunk.length || !same(chunk[i]!, bytes, name)) return;
    chunk.splice(i, 1);
    if (chunk.length === 0) this.chunks.splice(c, 1);
    this.changed(-1);
  }

  /**
   * Entries with at least `minBytes`, ascending. Changes while iterating are tolerated: the walk
   * goes on after the last entry it yielded, so it never repeats one and never skips one that was
   * there all along.
   */
  *from(minBytes: bigint): Generator<[bigint, string]> {
    let last: Entry = { bytes: minBytes, name: '' };
    let inclusive = true;
    let seen = -1;
    let c = 0;
    let i = 0;
    for (;;) {
      if (seen !== this.version) {
        c = this.chunkAt(last.bytes, last.name, inclusive);
        i = c < this.chunks.length ? bound(this.chunks[c]!, last.bytes, last.name, inclusive) : 0;
        seen = this.version;
      }
      const chunk = this.chunks[c];
      if (!chunk) return;
      if (i >= chunk.length) {
        c++;
        i = 0;
        continue;
      }
      last = chunk[i++]!;
      inclusive = false;
      yield [last.bytes, last.name];
    }
  }

  names(): string[] {
    return this.chunks.flatMap((chunk) => chunk.map((e) => e.name));
  }

  /** Index of the first chunk whose last entry is not less than (inclusive) or greater than (exclusive) the pair; chunks.length if none. */
  private chunkAt(bytes: bigint, name: string, inclusive: boolean): number {
    return firstFrom(this.chunks.length, (i) => this.chunks[i]!.at(-1)!, bytes, name, inclusive);
  }

  private changed(by: number): void {
    this.count += by;
    this.version++;
  }
}
