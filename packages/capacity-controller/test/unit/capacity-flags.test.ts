import { expect } from 'chai';
import { readCapacityFlags } from '../../src/capacity-flags.js';

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
