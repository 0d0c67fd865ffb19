import { expect } from 'chai';
import { architectureKeyTable } from '@topovol/testing';
import { capacityKeyString } from '../../src/capacity-key.js';
import type { CapacityKey } from '../../src/capacity-key.js';

// One sample per kind: the compiler insists on every kind of CapacityKey.
const samples: { [K in CapacityKey['kind']]: Extract<CapacityKey, { kind: K }> } = {
  sync: { kind: 'sync' },
  item: { kind: 'item', item: '<itemKey>' },
  status: { kind: 'status' },
};

describe('docs/architecture.md: the capacity key table', function () {
  it('lists every kind of CapacityKey with the keyString the queue and logs use', function () {
    expect(architectureKeyTable('capacity')).to.deep.equal(Object.values(samples).map((k) => ({ kind: k.kind, keyString: capacityKeyString(k) })));
  });
});
