import { expect } from 'chai';
import fc from 'fast-check';
import { formatBytes, isQuantity, parseQuantity, quantityBytes } from '../../src/quantity/quantity.js';

const GiB = 1n << 30n;

describe('quantities (resource.Quantity, exactly)', function () {
  it('whole bytes of every suffix, fraction and exponent, rounded up as Quantity.Value()', function () {
    const cases: [string, bigint | undefined][] = [
      ['0', 0n],
      ['1', 1n],
      ['1Ki', 1024n],
      ['10Gi', 10n * GiB],
      ['1.5Gi', 1_610_612_736n],
      ['1G', 1_000_000_000n],
      ['1E', 10n ** 18n],
      ['1Ei', 1n << 60n],
      ['1.5e3', 1500n],
      ['1e30', 10n ** 30n],
      ['100m', 1n],
      ['0.5m', 1n],
      ['1500m', 2n],
      ['+2k', 2000n],
      ['.5k', 500n],
      ['-1Gi', -GiB],
      ['-1500m', -1n],
      ['9223372036854775808', 9_223_372_036_854_775_808n],
      ['1Qi', undefined],
      ['', undefined],
      ['1 Gi', undefined],
      ['Gi', undefined],
      ['1e', undefined],
    ];
    for (const [q, want] of cases) expect(quantityBytes(q), q).to.equal(want);
  });

  it('compares exactly beyond 2^53, where floats would call a smaller volume big enough', function () {
    expect(quantityBytes('9223372036854775807')! < quantityBytes('9223372036854775808')!).to.equal(true);
    expect(quantityBytes('8Ei')! < quantityBytes('9223372036854775809')!).to.equal(true);
    expect(quantityBytes('1e30')! > quantityBytes('999999999999999999999999999999')!).to.equal(true);
  });

  // Without the clamp this computes 10^999999999 and the test times out.
  it('a forged exponent is clamped far beyond any size', function () {
    expect(quantityBytes('1e999999999')! > 10n ** 999n).to.equal(true);
    expect(quantityBytes('1e-999999999')).to.equal(1n);
  });

  it('formatBytes prints canonical binary SI that parses back to the same bytes', function () {
    expect(formatBytes(0n)).to.equal('0');
    expect(formatBytes(1536n << 20n)).to.equal('1536Mi');
    expect(formatBytes(1000n)).to.equal('1000');
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 1n << 80n }), (b) => quantityBytes(formatBytes(b)) === b));
  });

  it('parseQuantity (metrics and messages) agrees with the exact bytes where floats are exact', function () {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 30 }), fc.constantFrom('', 'Ki', 'Mi', 'k', 'M'), (n, s) => BigInt(Math.ceil(parseQuantity(`${n}${s}`))) === quantityBytes(`${n}${s}`)));
    expect(() => parseQuantity('1Qi')).to.throw(/invalid quantity/);
    expect(isQuantity('1Qi')).to.equal(false);
    expect(isQuantity('-1.5e3')).to.equal(true);
  });
});
