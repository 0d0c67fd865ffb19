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

  it('a line past the limit, in one chunk or across several, is reported once and ends the output; the lines before it count', function () {
    // V8 cannot make a string of more than about 512 MiB: building one threw out of the 'data' listener.
    for (const chunks of [['ab\ncdefgh\nij\n'], ['ab\ncd', 'ef', 'gh\nij\n'], ['ab\ncdefghij']]) {
      const out: string[] = [];
      let tooLong = 0;
      const s = lineSplitter((l) => out.push(l), { maxLineBytes: 5, onTooLong: () => tooLong++ });
      for (const c of chunks) s.push(Buffer.from(c));
      s.push(Buffer.from('more\n'));
      s.end();
      expect(out, chunks.join('|')).to.deep.equal(['ab']);
      expect(tooLong, chunks.join('|')).to.equal(1);
    }
    const out: string[] = [];
    const s = lineSplitter((l) => out.push(l), { maxLineBytes: 5, onTooLong: () => expect.fail('not too long') });
    s.push(Buffer.from('abcde\nfg'));
    s.push(Buffer.from('hij\n'));
    s.end();
    expect(out).to.deep.equal(['abcde', 'fghij']);
  });
});
