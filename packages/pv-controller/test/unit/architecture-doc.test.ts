import { expect } from 'chai';
import { architectureKeyTable } from '@topovol/testing';
import { binderKeyString } from '../../src/binder/binder-key.js';
import type { BinderKey } from '../../src/binder/binder-key.js';

// One sample per kind: the compiler insists on every kind of BinderKey.
const samples: { [K in BinderKey['kind']]: Extract<BinderKey, { kind: K }> } = {
  claim: { kind: 'claim', namespace: '<ns>', name: '<name>' },
  volume: { kind: 'volume', name: '<name>' },
};

describe('docs/architecture.md: the pv-binder key table', function () {
  it('lists every kind of BinderKey with the keyString the queue and logs use', function () {
    expect(architectureKeyTable('pv-binder')).to.deep.equal(Object.values(samples).map((k) => ({ kind: k.kind, keyString: binderKeyString(k) })));
  });
});
