/** Array-backed FIFO with O(1) amortised shift (Array#shift is O(n) on large arrays). */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++];
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

/** Items taken in a row from a level while a later one waits, before one of the later level's is taken. */
export const FAIR_SHARE = 32;

/** Levels past this one share it: the levels are walked on every shift, so they stay few. */
export const LAST_LEVEL = 15;

/**
 * Where a key of the given level queues. Levels are whole numbers from 0 to LAST_LEVEL; anything
 * else is clamped, and a level that is not a number goes last: as an array index NaN or Infinity
 * names a property that shift() never visits, and the key would be lost.
 */
export function levelIndex(level: number): number {
  if (Number.isNaN(level)) return LAST_LEVEL;
  return Math.min(LAST_LEVEL, Math.max(0, Math.floor(level)));
}

/**
 * FIFOs by priority level: shift() takes from the lowest level that has items, in order within a
 * level, except that after FAIR_SHARE items in a row taken while a later level waited it takes one
 * from the next waiting level: with two levels (the binder's claims and volumes), neither starves
 * while the other keeps refilling (upstream's binder has a queue and a worker per kind for the same
 * reason). With three or more refilling at once, the third and later wait for the second to empty.
 * A queue whose keys are all of one level behaves as a plain FIFO.
 */
export class LeveledFifo<T> {
  private readonly levels: Fifo<T>[] = [];
  private passedOver = 0;

  constructor(private readonly levelOf: (item: T) => number) {}

  get length(): number {
    let n = 0;
    for (const l of this.levels) if (l) n += l.length;
    return n;
  }

  push(item: T): void {
    (this.levels[levelIndex(this.levelOf(item))] ??= new Fifo<T>()).push(item);
  }

  clear(): void {
    this.levels.length = 0;
    this.passedOver = 0;
  }

  shift(): T | undefined {
    let first: Fifo<T> | undefined;
    for (const l of this.levels) {
      if (!l || l.length === 0) continue;
      if (!first) {
        first = l;
        continue;
      }
      // A later level waits.
      if (++this.passedOver > FAIR_SHARE) {
        this.passedOver = 0;
        return l.shift();
      }
      return first.shift();
    }
    this.passedOver = 0;
    return first?.shift();
  }
}
