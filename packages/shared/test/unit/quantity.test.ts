import { expect } from 'chai';
import fc from 'fast-check';
import { formatBytes, isQuantity, parseQuantity, quantityBytes } from '../../src/quantity/quantity.js';

const GiB = 1n << 30n;
const MAX_INT64 = (1n << 63n) - 1n;

/** Whole bytes of `num / den`, rounded up away from zero (resource.Quantity.Value()). */
const valueOf = (num: bigint, den: bigint): bigint => (num < 0n ? -((-num + den - 1n) / den) : (num + den - 1n) / den);

const SUFFIXES: [string, bigint, bigint][] = [
  // suffix, multiplier numerator, denominator
  ['n', 1n, 10n ** 9n],
  ['u', 1n, 10n ** 6n],
  ['m', 1n, 1000n],
  ['', 1n, 1n],
  ['k', 1000n, 1n],
  ['M', 10n ** 6n, 1n],
  ['G', 10n ** 9n, 1n],
  ['T', 10n ** 12n, 1n],
  ['P', 10n ** 15n, 1n],
  ['E', 10n ** 18n, 1n],
  ['Ki', 1n << 10n, 1n],
  ['Mi', 1n << 20n, 1n],
  ['Gi', 1n << 30n, 1n],
  ['Ti', 1n << 40n, 1n],
  ['Pi', 1n << 50n, 1n],
  ['Ei', 1n << 60n, 1n],
];

describe('quantities (resource.Quantity, exactly)', function () {
  // Expected values follow k8s.io/apimachinery pkg/api/resource quantity.go and its tests.
  it('whole bytes of every suffix, fraction and exponent, rounded up away from zero as Quantity.Value()', function () {
    const cases: [string, bigint | undefined][] = [
      ['0', 0n],
      ['1', 1n],
      ['007', 7n],
      ['1Ki', 1024n],
      ['10Gi', 10n * GiB],
      ['1.5Gi', 1_610_612_736n],
      ['100.035Ki', 102_436n],
      ['1G', 1_000_000_000n],
      ['1E', 10n ** 18n],
      ['12E', 12n * 10n ** 18n],
      ['1Ei', 1n << 60n],
      ['1.5e3', 1500n],
      ['1.3E+6', 1_300_000n],
      ['1E3', 1000n],
      ['1E-3', 1n],
      ['1e30', 10n ** 30n],
      ['100m', 1n],
      ['0.5m', 1n],
      ['1500m', 2n],
      ['0.9n', 1n],
      ['0.000000000001Ki', 1n],
      ['+2k', 2000n],
      ['.5k', 500n],
      ['1.', 1n],
      ['1.G', 1_000_000_000n],
      [' 1Gi ', GiB],
      ['-1Gi', -GiB],
      ['-1500m', -2n],
      ['-0.5m', -1n],
      ['9223372036854775808', 9_223_372_036_854_775_808n],
      // Binary-SI values are capped at 2^63 - 1; decimal ones are not.
      ['8Ei', MAX_INT64],
      ['9Ei', MAX_INT64],
      ['9223372036854775807Ki', MAX_INT64],
      ['-16Ei', -MAX_INT64],
      ['8E', 8n * 10n ** 18n],
      ['10E', 10n ** 19n],
      ['1Qi', undefined],
      ['1K', undefined],
      ['1m3', undefined],
      ['1Gi3', undefined],
      ['', undefined],
      ['+', undefined],
      ['.', undefined],
      ['1 Gi', undefined],
      ['Gi', undefined],
      ['1e', undefined],
    ];
    // Twice: the second pass is answered from the memo, and must not differ. Then past the memo's
    // bound (it is cleared, not grown), and the table once more.
    for (const [q, want] of cases) expect(quantityBytes(q), JSON.stringify(q)).to.equal(want);
    for (const [q, want] of cases) expect(quantityBytes(q), `again ${JSON.stringify(q)}`).to.equal(want);
    for (let i = 0; i < 10_000; i++) expect(quantityBytes(`${i}Ki`)).to.equal(BigInt(i) * 1024n);
    for (const [q, want] of cases) expect(quantityBytes(q), `after ${JSON.stringify(q)}`).to.equal(want);
  });

  it('numbers are bytes, rounded the same way', function () {
    expect(quantityBytes(1.5)).to.equal(2n);
    expect(quantityBytes(-1.5)).to.equal(-2n);
    expect(quantityBytes(1024)).to.equal(1024n);
    expect(quantityBytes(Number.NaN)).to.equal(undefined);
    expect(quantityBytes(undefined)).to.equal(undefined);
  });

  it('any mantissa, fraction and suffix: the exact value, rounded up', function () {
    const mantissa = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 6 }));
    fc.assert(
      fc.property(fc.boolean(), mantissa, fc.constantFrom(...SUFFIXES), (negative, [whole, frac], [suffix, mul, den]) => {
        const num = BigInt(`${whole}${frac}`) * mul;
        let exact = [num, den * 10n ** BigInt(frac.length)] as const;
        if (suffix.endsWith('i') && exact[0] > MAX_INT64 * exact[1]) exact = [MAX_INT64, 1n];
        const text = `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}${suffix}`;
        return quantityBytes(text) === valueOf(negative ? -exact[0] : exact[0], exact[1]);
      }),
    );
  });

  it('exponents agree with the suffix of the same power of ten', function () {
    const decimal = SUFFIXES.filter(([s]) => !s.endsWith('i') && s !== '');
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.constantFrom(...decimal), (n, [suffix, mul, den]) => {
        const exp = mul > 1n ? mul.toString().length - 1 : -(den.toString().length - 1);
        return quantityBytes(`${n}${suffix}`) === quantityBytes(`${n}e${exp}`) && quantityBytes(`${n}E${exp}`) === quantityBytes(`${n}e${exp}`);
      }),
    );
  });

  it('orders as the exact values do, beyond 2^53 too (floats would call a smaller volume big enough)', function () {
    expect(quantityBytes('9223372036854775807')! < quantityBytes('9223372036854775808')!).to.equal(true);
    expect(quantityBytes('8Ei')! < quantityBytes('9223372036854775808')!).to.equal(true);
    expect(quantityBytes('1e30')! > quantityBytes('999999999999999999999999999999')!).to.equal(true);
    // Two spellings of sizes up to 2^70: their order is the order of their bytes.
    const spelled = fc.tuple(fc.bigInt({ min: 0n, max: 1n << 60n }), fc.constantFrom(...SUFFIXES.filter(([, , den]) => den === 1n)));
    fc.assert(
      fc.property(spelled, spelled, ([a, [sa, ma]], [b, [sb, mb]]) => {
        const cap = (x: bigint, s: string): bigint => (s.endsWith('i') && x > MAX_INT64 ? MAX_INT64 : x);
        const [x, y] = [cap(a * ma, sa), cap(b * mb, sb)];
        const [qx, qy] = [quantityBytes(`${a}${sa}`)!, quantityBytes(`${b}${sb}`)!];
        return (qx < qy) === (x < y) && (qx === qy) === (x === y);
      }),
    );
  });

  // Without the clamp this computes 10^999999999 and the test times out.
  it('a forged exponent is clamped far beyond any size', function () {
    expect(quantityBytes('1e999999999')! > 10n ** 999n).to.equal(true);
    expect(quantityBytes('1e-999999999')).to.equal(1n);
  });

  it('formatBytes prints canonical binary SI that parses back to the same bytes, at any size', function () {
    expect(formatBytes(0n)).to.equal('0');
    expect(formatBytes(1536n << 20n)).to.equal('1536Mi');
    expect(formatBytes(1000n)).to.equal('1000');
    expect(formatBytes(7n << 60n)).to.equal('7Ei');
    // 16Ei would parse back as 2^63 - 1.
    expect(formatBytes(1n << 64n)).to.equal('18446744073709551616');
    fc.assert(fc.property(fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }), (b) => quantityBytes(formatBytes(b)) === b && isQuantity(formatBytes(b))));
  });

  it('parseQuantity (metrics and messages) agrees with the exact bytes where floats are exact', function () {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 30 }), fc.constantFrom('', 'Ki', 'Mi', 'k', 'M'), (n, s) => BigInt(Math.ceil(parseQuantity(`${n}${s}`))) === quantityBytes(`${n}${s}`)));
    expect(parseQuantity('1.5')).to.equal(1.5);
    expect(parseQuantity('-100m')).to.equal(-0.1);
    expect(() => parseQuantity('1Qi')).to.throw(/invalid quantity/);
    expect(isQuantity('1Qi')).to.equal(false);
    expect(isQuantity('-1.5e3')).to.equal(true);
  });
});
