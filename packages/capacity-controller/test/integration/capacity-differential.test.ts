import { expect } from 'chai';
import { LABEL_CSI_DRIVER_NAME, LABEL_CSI_MANAGED_BY, Resources, retryOnConflict } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient, Node, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { GiB } from '@topovol/testing/csi-test-driver';
import { RunningCapacity, startCapacityProvisioner, startDriver } from './capacity-harness.js';
import { useCapacityTestbed } from './capacity-testbed.js';

const ZONE = 'topology.kubernetes.io/zone';
const HOST = 'topology.csi.topovol.dev/node';

/** What a CSIStorageCapacity object says, as both publishers must say it; the managed-by value differs by design (docs/divergences.md). */
interface Published {
  storageClassName: string;
  segment: Record<string, string>;
  capacity?: string;
  maximumVolumeSize?: string;
  labels: Record<string, string>;
  owners: number;
  /** Every other field, less what differs between any two objects (name, uid, times, managedFields). */
  rest?: unknown;
}

function rest(o: CSIStorageCapacity): unknown {
  const { storageClassName: _c, nodeTopology: _t, capacity: _n, maximumVolumeSize: _m, metadata, ...other } = o;
  const { name: _name, namespace: _ns, uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, managedFields: _mf, labels: _l, ownerReferences: _o, ...meta } = metadata ?? {};
  return { ...other, metadata: meta };
}

async function published(admin: KubeClient, ns: string): Promise<Published[]> {
  const list = await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns });
  return list.items
    .map((o) => {
      const labels = { ...o.metadata?.labels };
      delete labels[LABEL_CSI_MANAGED_BY];
      return {
        storageClassName: o.storageClassName,
        segment: { ...o.nodeTopology?.matchLabels },
        ...(o.capacity !== undefined ? { capacity: String(o.capacity) } : {}),
        ...(o.maximumVolumeSize !== undefined ? { maximumVolumeSize: String(o.maximumVolumeSize) } : {}),
        labels,
        owners: o.metadata?.ownerReferences?.length ?? 0,
        rest: rest(o),
      };
    })
    .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

/**
 * The capacity loop against the real external-provisioner v6.3.0 `--enable-capacity` (central
 * deployment, KEP-1472), both publishing for the same CSI driver over gRPC on one control plane,
 * each into a namespace of its own: after every change, the objects of both must be the same set,
 * and the set this test expects (so that both agreeing on a wrong answer cannot pass). The
 * differences docs/divergences.md lists (managed-by, deeper segments, nodes being deleted, Ceph-CSI
 * pools) are left out of the scenario or normalised; each has its own test.
 */
describe('capacity differential: the same objects as external-provisioner --enable-capacity (real external-provisioner, CSI over gRPC)', function () {
  // A cold build of csi-provisioner takes minutes on two cores; cached afterwards.
  this.timeout(50 * 60_000);
  const tb = useCapacityTestbed('capdiff-');

  const published1 = (cls: string, segment: Record<string, string>, capacity: string, maximumVolumeSize?: string): Published => ({
    storageClassName: tb.name(cls),
    segment,
    capacity,
    ...(maximumVolumeSize ? { maximumVolumeSize } : {}),
    labels: { [LABEL_CSI_DRIVER_NAME]: tb.driverName },
    owners: 0,
    rest: { apiVersion: 'storage.k8s.io/v1', kind: 'CSIStorageCapacity', metadata: { generateName: 'csisc-' } },
  });
  const sorted = (xs: Published[]): Published[] => [...xs].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  /** Both namespaces hold `want`, eventually (external-provisioner still running). */
  async function agreeing(provisioner: ManagedProcess, theirs: string, step: string, want: Published[]): Promise<void> {
    await eventually(
      async () => {
        expect(provisioner.running, `csi-provisioner exited:\n${provisioner.logTail(30)}`).to.equal(true);
        expect(await published(tb.admin, theirs), `${step}: external-provisioner's objects`).to.deep.equal(sorted(want));
        expect(await published(tb.admin, tb.ns), `${step}: Topovol's objects`).to.deep.equal(sorted(want));
      },
      60_000,
      250,
    );
  }

  it('classes, zones, figures, relabelled, removed and unregistered nodes, deleted and Immediate classes, other drivers, hand edits', async function () {
    const theirs = await createTestNamespace(tb.admin, 'capdiff-ep-');
    const d = tb.driver;
    d.setCapacity({ [ZONE]: 'a' }, 5n * GiB);
    d.setCapacity({ [ZONE]: 'b' }, 7n * GiB, { maximumVolumeSize: 3n * GiB });
    d.setCapacity({ [ZONE]: 'c' }, 2n * GiB);
    d.setCapacity({ [ZONE]: 'a' }, 11n * GiB, { pool: 'p2' });
    await tb.addNode('n1', { [ZONE]: 'a' });
    await tb.addNode('n2', { [ZONE]: 'b' });
    await tb.addNode('n3', { [ZONE]: 'b' });
    await tb.addClass('fast');
    await tb.addClass('slow', { pool: 'p2' });
    // Neither publishes for these: an Immediate class (neither runs with --capacity-for-immediate-binding) and another driver's.
    for (const [c, provisioner, mode] of [
      ['now', tb.driverName, 'Immediate'],
      ['other', 'other.csi.example.com', 'WaitForFirstConsumer'],
    ] as const) {
      await tb.admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: tb.name(c) }, provisioner, volumeBindingMode: mode });
      tb.track('class', tb.name(c));
    }

    await tb.start(['--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
    const provisioner = await startCapacityProvisioner(d.endpoint, theirs);
    const obj = (cls: string, zone: string, capacity: string, maximumVolumeSize?: string): Published => published1(cls, { [ZONE]: zone }, capacity, maximumVolumeSize);
    const agree = (step: string, want: Published[]): Promise<void> => agreeing(provisioner, theirs, step, want);
    try {
      await agree('start', [obj('fast', 'a', '5Gi'), obj('fast', 'b', '7Gi', '3Gi'), obj('slow', 'a', '11Gi'), obj('slow', 'b', '0')]);

      d.setCapacity({ [ZONE]: 'a' }, 6n * GiB);
      await agree('the driver reports a new figure (the next poll)', [obj('fast', 'a', '6Gi'), obj('fast', 'b', '7Gi', '3Gi'), obj('slow', 'a', '11Gi'), obj('slow', 'b', '0')]);

      await retryOnConflict(async () => {
        const n = await tb.admin.get<Node>(Resources.nodes, tb.name('n3'));
        await tb.admin.replace(Resources.nodes, { ...n, metadata: { ...n.metadata, labels: { ...n.metadata?.labels, [ZONE]: 'c' } } });
      });
      await agree('a node moves to a new zone', [obj('fast', 'a', '6Gi'), obj('fast', 'b', '7Gi', '3Gi'), obj('fast', 'c', '2Gi'), obj('slow', 'a', '11Gi'), obj('slow', 'b', '0'), obj('slow', 'c', '0')]);

      await tb.admin.delete(Resources.nodes, tb.name('n1'));
      await tb.admin.delete(Resources.csiNodes, tb.name('n1'));
      await agree("a zone's last node goes", [obj('fast', 'b', '7Gi', '3Gi'), obj('fast', 'c', '2Gi'), obj('slow', 'b', '0'), obj('slow', 'c', '0')]);

      await tb.admin.delete(Resources.storageClasses, tb.name('slow'));
      await tb.addClass('gold', { pool: 'p2' });
      await agree('a class deleted, another added', [obj('fast', 'b', '7Gi', '3Gi'), obj('fast', 'c', '2Gi'), obj('gold', 'b', '0'), obj('gold', 'c', '0')]);

      await tb.addNode('n4', { [ZONE]: 'a' });
      const all = [obj('fast', 'a', '6Gi'), obj('fast', 'b', '7Gi', '3Gi'), obj('fast', 'c', '2Gi'), obj('gold', 'a', '11Gi'), obj('gold', 'b', '0'), obj('gold', 'c', '0')];
      await agree('a node of a zone that had gone joins', all);

      // Nodes that form no segment: the driver not registered there (no CSINode), or registered
      // with a topology key the node has no label for.
      await tb.addNode('n5', { [ZONE]: 'd' }, 'unregistered');
      await tb.addNode('n6', { 'example.com/rack': 'r1' }, [ZONE]);
      d.setCapacity({ [ZONE]: 'd' }, 1n * GiB);
      // A new figure for zone b too: once both show it, both have polled since the nodes came, so
      // "nothing for zone d" is an answer and not a look taken too early.
      d.setCapacity({ [ZONE]: 'b' }, 8n * GiB, { maximumVolumeSize: 3n * GiB });
      const later = all.map((o) => (o.storageClassName === tb.name('fast') && o.segment[ZONE] === 'b' ? obj('fast', 'b', '8Gi', '3Gi') : o));
      await agree('nodes without the driver or without its topology label', later);

      // Someone deletes one object of each publisher and edits another's figure.
      for (const ns of [theirs, tb.ns]) {
        const objects = (await tb.admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
        const byClassZone = (cls: string, zone: string): CSIStorageCapacity => objects.find((o) => o.storageClassName === tb.name(cls) && o.nodeTopology?.matchLabels?.[ZONE] === zone)!;
        await tb.admin.delete(Resources.csiStorageCapacities, byClassZone('fast', 'a').metadata!.name!, ns);
        await tb.admin.patch(Resources.csiStorageCapacities, byClassZone('fast', 'c').metadata!.name!, ns, 'merge', { capacity: '999Gi' });
      }
      await agree('an object deleted and another edited by hand', later);
    } finally {
      await provisioner.stop();
    }
  });
  // KEP-1472's per-node deployment: external-provisioner --node-deployment takes its node's segment
  // from NodeGetInfo; Topovol --capacity-node-name from the node's labels for the CSINode's keys.
  it('per node: the node\'s segment from its driver, figures, a class deleted and another added', async function () {
    const theirs = await createTestNamespace(tb.admin, 'capdiff-ep-');
    const node = tb.name('n1');
    // The testbed's driver answers no NodeGetInfo: this node's driver is one of its own, same name.
    const { driver, cleanup } = await startDriver({ name: tb.driverName, node: { nodeId: node, accessibleTopology: { [HOST]: node } } });
    driver.setCapacity({ [HOST]: node }, 4n * GiB);
    driver.setCapacity({ [HOST]: node }, 9n * GiB, { pool: 'p2', maximumVolumeSize: 2n * GiB });
    await tb.addNode('n1', { [HOST]: node, [ZONE]: 'a' }, [HOST]);
    await tb.addClass('fast');
    await tb.addClass('slow', { pool: 'p2' });
    tb.loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${tb.ns}`, `--capacity-node-name=${node}`, '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
    const provisioner = await startCapacityProvisioner(driver.endpoint, theirs, node);
    const at = (cls: string, capacity: string, max?: string): Published => published1(cls, { [HOST]: node }, capacity, max);
    try {
      await agreeing(provisioner, theirs, 'start', [at('fast', '4Gi'), at('slow', '9Gi', '2Gi')]);
      driver.setCapacity({ [HOST]: node }, 3n * GiB);
      await agreeing(provisioner, theirs, 'a new figure', [at('fast', '3Gi'), at('slow', '9Gi', '2Gi')]);
      await tb.admin.delete(Resources.storageClasses, tb.name('slow'));
      await tb.addClass('gold', { pool: 'p2' });
      await agreeing(provisioner, theirs, 'a class deleted, another added', [at('fast', '3Gi'), at('gold', '9Gi', '2Gi')]);
    } finally {
      await provisioner.stop();
      await tb.loop.stop();
      tb.loop = undefined;
      await cleanup();
    }
  });
});
