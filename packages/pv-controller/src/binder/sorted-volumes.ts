/**
 * Volume names ordered by (capacity in bytes, name): the order the binder prefers them in (the
 * smallest that fits, ties by name), so a match is found by a binary search and a short walk.
 * Inserts and removals splice an array, which is cheap at the sizes clusters have (10^5).
 */
export class SortedVolumes {
  private readonly bytes: bigint[] = [];
  private readonly nameAt: string[] = [];

  get size(): number {
    return this.nameAt.length;
  }

  insert(bytes: bigint, name: string): void {
    const i = this.lowerBound(bytes, name);
    if (this.nameAt[i] === name && this.bytes[i] === bytes) return;
    this.bytes.splice(i, 0, bytes);
    this.nameAt.splice(i, 0, name);
  }

  remove(bytes: bigint, name: string): void {
    const i = this.lowerBound(bytes, name);
    if (this.nameAt[i] !== name || this.bytes[i] !== bytes) return;
    this.bytes.splice(i, 1);
    this.nameAt.splice(i, 1);
  }

  /** Entries with at least `minBytes`, ascending. Tolerates removals while iterating (it may then skip one entry, never repeat one). */
  *from(minBytes: bigint): Generator<[bigint, string]> {
    for (let i = this.lowerBound(minBytes, ''); i < this.nameAt.length; i++) yield [this.bytes[i]!, this.nameAt[i]!];
  }

  names(): string[] {
    return [...this.nameAt];
  }

  /** First index whose (bytes, name) is not less than the given pair. */
  private lowerBound(bytes: bigint, name: string): number {
    let lo = 0;
    let hi = this.nameAt.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const b = this.bytes[mid]!;
      if (b < bytes || (b === bytes && this.nameAt[mid]! < name)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
