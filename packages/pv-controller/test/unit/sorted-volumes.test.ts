import { expect } from 'chai';
import fc from 'fast-check';
import { SortedVolumes } from '../../src/binder/sorted-volumes.js';

// The binder's sorted free lists against a plain sorted model, with chunks small enough to split
// and vanish often, and changes made in the middle of a walk (as a reconcile's removal can).

type Op = { insert: boolean; bytes: bigint; name: string };
const opArb = fc.record({ insert: fc.boolean(), bytes: fc.bigInt({ min: 0n, max: 5n }), name: fc.constantFrom(...Array.from({ length: 12 }, (_, i) => `v${i}`)) });
const keyOf = (bytes: bigint, name: string): string => `${bytes}\n${name}`;
const less = (a: [bigint, string], b: [bigint, string]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

class Model {
  readonly entries = new Map<string, [bigint, string]>();
  apply(op: Op): void {
    if (op.insert) this.entries.set(keyOf(op.bytes, op.name), [op.bytes, op.name]);
    else this.entries.delete(keyOf(op.bytes, op.name));
  }
  sorted(min = -1n): [bigint, string][] {
    return [...this.entries.values()].filter((e) => e[0] >= min).sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0));
  }
}

function apply(s: SortedVolumes, op: Op): void {
  if (op.insert) s.insert(op.bytes, op.name);
  else s.remove(op.bytes, op.name);
}

describe('SortedVolumes', function () {
  for (const maxChunk of [2, 3, 8, 512]) {
    it(`holds what a sorted list would, after any inserts and removals (chunks of at most ${maxChunk})`, function () {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 200 }), fc.bigInt({ min: 0n, max: 6n }), (ops, min) => {
          const s = new SortedVolumes(maxChunk);
          const m = new Model();
          for (const op of ops) {
            apply(s, op);
            m.apply(op);
          }
          expect(s.size).to.equal(m.entries.size);
          expect(s.names()).to.deep.equal(m.sorted().map((e) => e[1]));
          expect([...s.from(min)]).to.deep.equal(m.sorted(min));
        }),
        { numRuns: 400, seed: 7 },
      );
    });

    it(`a walk with changes in between yields ascending, never twice, and every entry there all along (chunks of at most ${maxChunk})`, function () {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 60 }), fc.array(fc.array(opArb, { maxLength: 4 }), { maxLength: 40 }), fc.bigInt({ min: 0n, max: 6n }), (setup, during, min) => {
          const s = new SortedVolumes(maxChunk);
          const m = new Model();
          for (const op of setup) {
            apply(s, op);
            m.apply(op);
          }
          const stayed = new Map(m.sorted(min).map((e) => [keyOf(...e), e]));
          const yielded: [bigint, string][] = [];
          let step = 0;
          for (const e of s.from(min)) {
            if (yielded.length > 0) expect(less(yielded[yielded.length - 1]!, e), 'ascending, no repeat').to.equal(true);
            expect(m.entries.has(keyOf(...e)), 'only entries present now').to.equal(true);
            yielded.push(e);
            for (const op of during[step++] ?? []) {
              apply(s, op);
              m.apply(op);
              stayed.delete(keyOf(op.bytes, op.name));
            }
          }
          const got = new Set(yielded.map((e) => keyOf(...e)));
          for (const k of stayed.keys()) expect(got.has(k), `${k} was there all along`).to.equal(true);
        }),
        { numRuns: 400, seed: 11 },
      );
    });
  }

  it('100,000 entries in any order: inserts and removals stay correct', function () {
    const s = new SortedVolumes();
    const n = 100_000;
    // A fixed permutation (multiplicative step coprime with n), sizes in five steps as the bench's.
    for (let i = 0; i < n; i++) {
      const j = (i * 7919) % n;
      s.insert(BigInt(1000 + 100 * (j % 5)), `v${String(j).padStart(6, '0')}`);
    }
    expect(s.size).to.equal(n);
    const all = [...s.from(0n)];
    for (let i = 1; i < all.length; i++) expect(less(all[i - 1]!, all[i]!)).to.equal(true);
    for (let j = 0; j < n; j += 2) s.remove(BigInt(1000 + 100 * (j % 5)), `v${String(j).padStart(6, '0')}`);
    expect(s.size).to.equal(n / 2);
    expect([...s.from(0n)].every(([, name]) => Number(name.slice(1)) % 2 === 1)).to.equal(true);
  });
});
