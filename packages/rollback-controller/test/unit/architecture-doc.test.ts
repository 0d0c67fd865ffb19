import { expect } from 'chai';
import { architectureKeyTable } from '@topovol/testing';
import { rollbackKeyString } from '../../src/rollback/rollback-key.js';
import type { RollbackKey } from '../../src/rollback/rollback-key.js';

// One sample per kind: the compiler insists on every kind of RollbackKey.
const samples: { [K in RollbackKey['kind']]: Extract<RollbackKey, { kind: K }> } = {
  pod: { kind: 'pod', namespace: '<ns>', name: '<name>' },
  volume: { kind: 'volume', name: '<name>' },
  record: { kind: 'record', name: '<name>' },
};

describe('docs/architecture.md: the rollback key table', function () {
  it('lists every kind of RollbackKey with the keyString the queue and logs use', function () {
    expect(architectureKeyTable('rollback')).to.deep.equal(Object.values(samples).map((k) => ({ kind: k.kind, keyString: rollbackKeyString(k) })));
  });
});
