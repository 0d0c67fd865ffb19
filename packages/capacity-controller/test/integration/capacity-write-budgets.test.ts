import { expect } from 'chai';
import { eventually } from '@topovol/testing';
import { GiB } from '@topovol/testing/csi-test-driver';
import { capacityObjects } from './capacity-harness.js';
import { useCapacityTestbed } from './capacity-testbed.js';

const ZONE = 'topology.kubernetes.io/zone';

// The CSIStorageCapacity objects (what kube-scheduler reads) and the aggregated status each have a
// --capacity-api-qps budget of their own: the status's renewals come in bursts, and sharing one
// budget they held back the objects of a node label change by seconds (hack/bench/capacity-labels.sh).
describe('capacity: the aggregated status never spends the budget of the CSIStorageCapacity objects (real API server)', function () {
  this.timeout(120_000);
  const tb = useCapacityTestbed('capbudget-');

  it('with a budget of exactly one write per object and no refill, every object is written though the status wants requests too', async function () {
    tb.driver.setCapacity({ [ZONE]: 'z1' }, 10n * GiB);
    await tb.addNode('n1', { [ZONE]: 'z1' });
    await tb.addClass('a');
    await tb.addClass('b');
    // Two tokens and the next in 1,000 s: the two creates use the objects' budget whole. The status
    // (a list of its shards, a read or create of its head, its writes) starts as soon as the
    // segments are known, before the driver's answers: sharing the budget it takes a token first,
    // and one object would wait 1,000 s.
    await tb.start(['--capacity-api-qps=0.001', '--capacity-api-burst=2', '--capacity-poll-interval=10m']);
    await eventually(
      async () =>
        expect(await capacityObjects(tb.admin, tb.ns)).to.deep.equal([
          { storageClassName: tb.name('a'), segment: { [ZONE]: 'z1' }, capacity: '10Gi' },
          { storageClassName: tb.name('b'), segment: { [ZONE]: 'z1' }, capacity: '10Gi' },
        ]),
      30_000,
    );
  });
});
