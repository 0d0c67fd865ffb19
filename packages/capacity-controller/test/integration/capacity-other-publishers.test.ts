import { expect } from 'chai';
import { LABEL_CSI_DRIVER_NAME, LABEL_CSI_MANAGED_BY, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, Event } from '@topovol/shared';
import { createTestNamespace, eventually } from '@topovol/testing';
import { GiB } from '@topovol/testing/csi-test-driver';
import { EXTERNAL_PROVISIONER, externalProvisionerManagedBy, OTHER_PUBLISHER_REASON } from '../../src/objects/other-publishers.js';
import { CSIDriverCapacities } from '../../src/status/index.js';
import type { CSIDriverCapacity } from '../../src/status/index.js';
import { capacityObjects, metricValue, startCapacityProvisioner } from './capacity-harness.js';
import { useCapacityTestbed } from './capacity-testbed.js';

const ZONE = 'topology.kubernetes.io/zone';

// external-provisioner --enable-capacity left running for the same driver: kube-scheduler reads
// both publishers' objects for a class and segment and trusts the larger figure. Topovol cannot
// stop it; it says so on the StorageClass and in a metric.
describe('capacity: another publisher of the same driver (real API server, CSI over gRPC)', function () {
  this.timeout(120_000);
  const tb = useCapacityTestbed('capother-');

  /** An object for class fast of zone a, as external-provisioner writes them (pkg/capacity/capacity.go), in its own namespace. */
  const theirObject = (namespace: string, managedBy: string): CSIStorageCapacity => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIStorageCapacity',
    metadata: { generateName: 'csisc-', namespace, labels: { [LABEL_CSI_DRIVER_NAME]: tb.driverName, [LABEL_CSI_MANAGED_BY]: managedBy } },
    storageClassName: tb.name('fast'),
    nodeTopology: { matchLabels: { [ZONE]: 'a' } },
    capacity: '100Gi',
  });
  const otherPublisherEvents = async (): Promise<string> =>
    (await tb.admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${tb.name('fast')},reason=${OTHER_PUBLISHER_REASON}` })).items.map((e) => `${e.type}: ${e.message}`).join('\n');

  it("external-provisioner's object for one of our classes: a Warning on the class, the metric and the SolePublisher condition, gone with the object; our own objects are not counted", async function () {
    tb.driver.setCapacity({ [ZONE]: 'a' }, 5n * GiB);
    await tb.addNode('n1', { [ZONE]: 'a' });
    await tb.addClass('fast');
    // The aggregated status is published every third of the expiry: 1 s here.
    await tb.start(['--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms', '--capacity-status-expiry=3s']);
    await eventually(async () => expect((await capacityObjects(tb.admin, tb.ns)).map((o) => o.capacity)).to.deep.equal(['5Gi']));
    const gauge = (): Promise<number> => metricValue('topovol_capacity_other_publisher_objects', { driver: tb.driverName });
    const sole = async (): Promise<string> => {
      const c = (await tb.admin.get<CSIDriverCapacity>(CSIDriverCapacities, tb.driverName).catch(() => undefined))?.status?.conditions?.find((x) => x.type === 'SolePublisher');
      return `${c?.status} ${c?.reason}`;
    };
    await eventually(async () => expect(await sole()).to.equal('True NoOtherPublisher'));
    expect(await gauge(), 'our own objects').to.equal(0);

    const theirs = await createTestNamespace(tb.admin, 'ext-prov-');
    const obj = await tb.admin.create(Resources.csiStorageCapacities, theirObject(theirs, EXTERNAL_PROVISIONER));
    await eventually(async () => expect(await otherPublisherEvents()).to.match(/^Warning: 1 CSIStorageCapacity object\(s\) of driver .* for class .* are also published by external-provisioner \(namespace ext-prov-/));
    expect(await gauge()).to.equal(1);
    await eventually(async () => expect(await sole()).to.equal(`False ${OTHER_PUBLISHER_REASON}`));

    await tb.admin.delete(Resources.csiStorageCapacities, obj.metadata!.name!, theirs);
    await eventually(async () => expect(await gauge()).to.equal(0));
    await eventually(async () => expect(await sole()).to.equal('True NoOtherPublisher'));
    // Our figure was never touched.
    expect((await capacityObjects(tb.admin, tb.ns)).map((o) => o.capacity)).to.deep.equal(['5Gi']);
  });

  it('the real external-provisioner with --enable-capacity against the same driver is reported', async function () {
    // A cold build of csi-provisioner takes minutes on two cores; cached afterwards.
    this.timeout(50 * 60_000);
    tb.driver.setCapacity({ [ZONE]: 'a' }, 5n * GiB);
    await tb.addNode('n1', { [ZONE]: 'a' });
    await tb.addClass('fast');
    await tb.start(['--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
    const theirs = await createTestNamespace(tb.admin, 'ext-prov-');
    const provisioner = await startCapacityProvisioner(tb.driver.endpoint, theirs);
    try {
      await eventually(async () => {
        expect(provisioner.running, `csi-provisioner exited:\n${provisioner.logTail(30)}`).to.equal(true);
        const written = await tb.admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: theirs });
        expect(written.items.map((o) => o.metadata?.labels?.[LABEL_CSI_MANAGED_BY]), 'written by the real external-provisioner').to.deep.equal([EXTERNAL_PROVISIONER]);
        expect(await otherPublisherEvents()).to.match(/^Warning: 1 CSIStorageCapacity object\(s\) of driver .* for class .* are also published by external-provisioner \(namespace ext-prov-/);
      }, 60_000);
    } finally {
      await provisioner.stop();
    }
  });

  // external-provisioner shortens its per-node value past 63 characters (externalProvisionerManagedBy).
  for (const [what, node] of [['', 'n1'], [', a node name it shortens', `n1-${'x'.repeat(40)}`]] as const) {
    it(`per node${what}: external-provisioner's instance on this node is reported on the Node; another node's is not this instance's to report`, async function () {
      tb.driver.setCapacity({ [ZONE]: 'a' }, 5n * GiB);
      await tb.addNode(node, { [ZONE]: 'a' });
      await tb.addClass('fast');
      await tb.start([`--capacity-node-name=${tb.name(node)}`, '--capacity-ownerref-level=-1', '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
      await eventually(async () => expect((await capacityObjects(tb.admin, tb.ns)).map((o) => o.capacity)).to.deep.equal(['5Gi']));
      const theirs = await createTestNamespace(tb.admin, 'ext-prov-');
      await tb.admin.create(Resources.csiStorageCapacities, theirObject(theirs, externalProvisionerManagedBy(tb.name('elsewhere'))));
      await tb.admin.create(Resources.csiStorageCapacities, theirObject(theirs, externalProvisionerManagedBy(tb.name(node))));
      const onNode = async (): Promise<string> =>
        (await tb.admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${tb.name(node)},reason=${OTHER_PUBLISHER_REASON}` })).items.map((e) => `${e.type}: ${e.message}`).join('\n');
      await eventually(async () => expect(await onNode()).to.match(new RegExp(`^Warning: 1 CSIStorageCapacity object\\(s\\) of driver .* for class ${tb.name('fast')} are also published by ${externalProvisionerManagedBy(tb.name(node))} \\(`)));
      expect(await metricValue('topovol_capacity_other_publisher_objects', { driver: tb.driverName })).to.equal(1);
      expect(await otherPublisherEvents(), 'nothing on the class: thousands of instances would each record one').to.equal('');
    });
  }
});
