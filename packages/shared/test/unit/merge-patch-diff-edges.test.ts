import { expect } from 'chai';
import { mergePatchDiff } from '../../src/client/merge-patch-diff.js';

// Where undefined meets a JSON merge patch (RFC 7386): JSON has no undefined, so a key set to it is
// no key, and only null removes. Written from mutation testing of the client.

describe('mergePatchDiff edges', function () {
  it('a key undefined on both sides is no change; undefined as the whole target removes', function () {
    expect(mergePatchDiff({ a: undefined, b: 1 }, { b: 1 })).to.equal(undefined);
    expect(mergePatchDiff({ b: 1 }, { a: undefined, b: 1 })).to.equal(undefined);
    expect(mergePatchDiff(1, undefined)).to.equal(null);
  });
});
