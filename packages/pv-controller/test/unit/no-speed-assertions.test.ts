import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';

/** A clock read: what a test would subtract to time something. */
const CLOCK = /Date\.now\(\)|performance\.now\(\)|process\.hrtime/;
/** An upper bound in a chai chain. */
const UPPER_BOUND = /\.(below|lessThan|lt|at\.most|most|lte|within)\(/;

/** The first argument of each `expect(...)` and the rest of its statement. */
function expectations(source: string): { subject: string; chain: string; line: number }[] {
  const out: { subject: string; chain: string; line: number }[] = [];
  for (const m of source.matchAll(/\bexpect\(/g)) {
    let depth = 1;
    let i = m.index + m[0].length;
    let end = -1;
    for (; i < source.length && depth > 0; i++) {
      const ch = source[i];
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      else if (ch === ',' && depth === 1 && end < 0) end = i;
    }
    const subject = source.slice(m.index + m[0].length, end < 0 ? i - 1 : end);
    const stop = source.indexOf(';', i);
    out.push({ subject, chain: source.slice(i, stop < 0 ? undefined : stop), line: source.slice(0, m.index).split('\n').length });
  }
  return out;
}

/** Names assigned from a clock read in the file (`const took = Date.now() - t0`). */
function timedNames(source: string): string[] {
  return [...source.matchAll(/(?:const|let|var)\s+(\w+)\s*=\s*([^;]*)/g)].filter((m) => CLOCK.test(m[2]!)).map((m) => m[1]!);
}

/**
 * A comment on the line before a time bound that is evidence of a behaviour, not a claim of speed
 * (a released Lease taken before it could have expired), says so with these words.
 */
const NOT_SPEED = 'not a speed claim';

/** Assertions that something took at most some time: a clock read, or a name assigned from one, under an upper bound. */
export function speedAssertions(source: string): number[] {
  const names = timedNames(source);
  const lines = source.split('\n');
  return expectations(source)
    .filter((e) => UPPER_BOUND.test(e.chain) && (CLOCK.test(e.subject) || names.some((n) => new RegExp(`\\b${n}\\b`).test(e.subject))))
    .filter((e) => !(lines[e.line - 2] ?? '').includes(NOT_SPEED))
    .map((e) => e.line);
}

function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === 'dist' || d.name === 'node_modules' ? [] : testSources(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

// Issue acceptance (performance): tests never assert wall-clock speed; hack/bench measures it.
describe('no test asserts wall-clock speed', function () {
  it('finds a clock read, or a name assigned from one, under an upper bound; not counts, or clock reads in messages', function () {
    const source = [
      'const t0 = Date.now();',
      'await work();',
      'const took = Date.now() - t0;',
      "expect(took, 'fast').to.be.below(500);",
      'expect(performance.now() - t1).to.be.at.most(2_000);',
      'expect(made, `calls over ${Date.now() - t0} ms`).to.be.at.most(bound);',
      'expect(took).to.be.above(0);',
      '// The Lease was released, not expired (not a speed claim).',
      'expect(Date.now() - released).to.be.below(LEASE_MS);',
      'expect(count).to.be.below(3);',
    ].join('\n');
    expect(speedAssertions(source)).to.deep.equal([4, 5]);
  });

  it('holds for every test source in packages/*/test', function () {
    const packages = path.join(repoRoot(), 'packages');
    const found = readdirSync(packages)
      .map((p) => path.join(packages, p, 'test'))
      .filter((d) => readdirSync(path.dirname(d)).includes('test'))
      .flatMap(testSources)
      .filter((f) => path.basename(f) !== 'no-speed-assertions.test.ts')
      .flatMap((f) => speedAssertions(readFileSync(f, 'utf8')).map((line) => `${path.relative(repoRoot(), f)}:${line}`));
    expect(found, 'assertions on elapsed time (measure it in hack/bench instead)').to.deep.equal([]);
  });
});
