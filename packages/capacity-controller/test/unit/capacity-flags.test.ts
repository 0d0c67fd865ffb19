import { expect } from 'chai';
import { readCapacityFlags, retryCapMs } from '../../src/capacity-flags.js';

describe('capacity flags: the namespace of the CSIStorageCapacity objects', function () {
  const saved = process.env.NAMESPACE;
  afterEach(function () {
    if (saved === undefined) delete process.env.NAMESPACE;
    else process.env.NAMESPACE = saved;
  });

  it('the flag, else $NAMESPACE (as external-provisioner, which requires it), else topovol-system', function () {
    delete process.env.NAMESPACE;
    expect(readCapacityFlags({}).namespace).to.equal('topovol-system');
    process.env.NAMESPACE = 'storage';
    expect(readCapacityFlags({}).namespace).to.equal('storage');
    expect(readCapacityFlags({ 'capacity-namespace': 'elsewhere' }).namespace).to.equal('elsewhere');
  });
});

describe('capacity flags: how long a failing item waits at most', function () {
  it('the poll interval, or 5 minutes (external-provisioner\'s --retry-interval-max) when the poll is longer', function () {
    expect([1_000, 60_000, 5 * 60_000, 60 * 60_000].map(retryCapMs)).to.deep.equal([1_000, 60_000, 5 * 60_000, 5 * 60_000]);
  });
});
