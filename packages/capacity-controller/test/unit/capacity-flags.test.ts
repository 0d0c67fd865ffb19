import { expect } from 'chai';
import { FlagError, parseFlags } from '@topovol/shared';
import { capacityFlags, readCapacityFlags, retryCapMs } from '../../src/capacity-flags.js';

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

describe('capacity flags: names that go into labels, selectors and objects are checked at start', function () {
  const parse = (...argv: string[]): unknown => parseFlags(capacityFlags, argv).values;
  it('refuses a value no label, namespace or node can have, naming the flag', function () {
    const bad: [string, RegExp][] = [
      ['--capacity-managed-by=Topovol Capacity', /--capacity-managed-by: .*alphanumerics/],
      [`--capacity-managed-by=${'m'.repeat(64)}`, /--capacity-managed-by: .*longer than 63/],
      ['--driver-name=csi/driver', /--driver-name: /],
      ['--capacity-namespace=Storage_Ops', /--capacity-namespace: .*no namespace name/],
      ['--capacity-node-name=node 1', /--capacity-node-name: .*no node name/],
      ['--capacity-managed-by=', /--capacity-managed-by: may not be empty/],
    ];
    for (const [arg, why] of bad) expect(() => parse(arg), arg).to.throw(FlagError, why);
  });
  it('takes the values the examples and external-provisioner users give, and empty where there is a fallback', function () {
    expect(() => parse('--capacity-managed-by=topovol-capacity', '--driver-name=hostpath.csi.k8s.io', '--capacity-namespace=kube-system', '--capacity-node-name=ip-10-0-0-1.ec2.internal')).to.not.throw();
    expect(() => parse('--driver-name=', '--capacity-namespace=', '--capacity-node-name=')).to.not.throw();
  });
});
