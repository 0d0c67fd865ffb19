import { expect } from 'chai';
import { compareResourceVersions } from '../../src/rollback/resource-version.js';

describe('compareResourceVersions: resourceVersions ordered as KEP-5504 defines', function () {
  const cases: { a: string; b: string; want: number | undefined; why: string }[] = [
    { a: '42', b: '42', want: 0, why: 'equal' },
    { a: '0', b: '0', want: 0, why: 'zero equals zero' },
    { a: '9', b: '10', want: -1, why: 'shorter is older, though it sorts after as a string' },
    { a: '100', b: '99', want: 1, why: 'longer is newer' },
    { a: '123', b: '124', want: -1, why: 'same length: lexicographic' },
    { a: '500', b: '499', want: 1, why: 'same length: lexicographic, newer' },
    { a: '9007199254740993', b: '9007199254740992', want: 1, why: 'beyond 2^53, where numbers would be equal' },
    { a: '18446744073709551615', b: '18446744073709551614', want: 1, why: 'uint64 max' },
    { a: '99999999999999999999', b: '100000000000000000000', want: -1, why: 'beyond 2^64, by length' },
    { a: '007', b: '7', want: undefined, why: 'leading zeros' },
    { a: '7', b: '00', want: undefined, why: 'leading zeros on the right' },
    { a: '', b: '1', want: undefined, why: 'empty' },
    { a: '1', b: '', want: undefined, why: 'empty on the right' },
    { a: '12a', b: '12', want: undefined, why: 'not a digit' },
    { a: '-1', b: '1', want: undefined, why: 'a sign' },
    { a: ' 1', b: '1', want: undefined, why: 'whitespace' },
    { a: '1.0', b: '1', want: undefined, why: 'a decimal point' },
    { a: '1e3', b: '1000', want: undefined, why: 'an exponent' },
  ];
  for (const { a, b, want, why } of cases) {
    it(`${JSON.stringify(a)} vs ${JSON.stringify(b)}: ${why}`, function () {
      const got = compareResourceVersions(a, b);
      expect(got === undefined ? undefined : Math.sign(got)).to.equal(want);
      // Antisymmetric: swapping the arguments flips the sign (and keeps undefined).
      const swapped = compareResourceVersions(b, a);
      expect(swapped === undefined ? undefined : Math.sign(swapped)).to.equal(want === undefined ? undefined : want === 0 ? 0 : -want);
    });
  }
});
