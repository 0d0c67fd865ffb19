import { expect } from 'chai';
import fc from 'fast-check';
import { lineSplitter } from '../../src/informer/line-splitter.js';

function split(chunks: Buffer[], end = true): string[] {
  const out: string[] = [];
  const s = lineSplitter((l) => out.push(l));
  for (const c of chunks) s.push(c);
  if (end) s.end();
  return out;
}

describe('the watch line splitter', function () {
  it('yields every non-empty line whole, however the bytes are chunked (multi-byte characters split too)', function () {
    const line = fc.string({ unit: fc.constantFrom('a', '{', '"', ' ', 'é', '€', '𝄞', '\r'), maxLength: 40 });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 30 }), (lines, cuts) => {
        const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''));
        const at = [...new Set(cuts.map((c) => (bytes.length ? c % bytes.length : 0)))].sort((a, b) => a - b);
        const chunks = [0, ...at].map((from, i, all) => bytes.subarray(from, all[i + 1] ?? bytes.length));
        expect(split(chunks)).to.deep.equal(lines.filter((l) => l.length > 0));
      }),
    );
  });

  it('a last line without a newline counts at the end of the stream, not before', function () {
    expect(split([Buffer.from('{"a":1}\n{"b"'), Buffer.from(':2}')], false)).to.deep.equal(['{"a":1}']);
    expect(split([Buffer.from('{"a":1}\n{"b"'), Buffer.from(':2}')])).to.deep.equal(['{"a":1}', '{"b":2}']);
  });
});
