import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { CSIDriver, CSIStorageCapacity, KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createReadyNode, createTestNamespace, deleteNow, eventually, installCrds, sharedControlPlane, startKubeControllerManager, startKubeScheduler, withPodEnv } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { GiB } from '@topovol/testing/csi-test-driver';
import { registerDriverOnNode, RunningCapacity, startDriver } from './capacity-harness.js';

const HOST = 'topology.per-node.csi.topovol.dev/node';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

/**
 * Local storage, one driver per node: three nodes, each with its own driver instance (which, like
 * LVM or local-disk drivers, reports its own node whatever topology it is asked about) and its own
 * capacity instance with --capacity-node-name, as external-provisioner's --node-deployment
 * --enable-capacity runs. Each publishes its own node's objects only; the real kube-scheduler reads
 * them; a node's objects go with its instance's pod.
 */
describe('capacity per node: one instance per node publishes that node only', function () {
  this.timeout(180_000);
  const SCHEDULER = 'topovol-per-node-capacity';
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns = '';
  let driverName = '';
  const nodes = ['n1', 'n2', 'n3'];
  const figures = [3n * GiB, 4n * GiB, 20n * GiB];
  const drivers: CsiTestDriver[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const loops: RunningCapacity[] = [];
  let scheduler: ManagedProcess | undefined;
  let kcm: ManagedProcess | undefined;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    await installCrds(admin);
    ns = await createTestNamespace(admin, 'capnode-');
    driverName = `${ns}.csi.topovol.test`;
    await admin.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: driverName }, spec: { attachRequired: false, storageCapacity: true } });
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('local') }, provisioner: driverName, volumeBindingMode: 'WaitForFirstConsumer' });
    for (const [i, n] of nodes.entries()) {
      await createReadyNode(admin, name(n), { [HOST]: name(n) });
      await registerDriverOnNode(admin, name(n), driverName, [HOST]);
      const { driver, cleanup } = await startDriver({ name: driverName });
      // The empty segment: this driver answers with its node's figure whatever it is asked about.
      driver.setCapacity({}, figures[i]!);
      drivers.push(driver);
      cleanups.push(cleanup);
      // Each instance's pod, as the DaemonSet would have made it (no kubelet here: only the object).
      await admin.create<KubeObject>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `capacity-${n}`, namespace: ns }, spec: { nodeName: name(n), containers: [{ name: 'c', image: 'x' }] } } as KubeObject);
    }
    for (const [i, n] of nodes.entries()) {
      loops.push(
        await withPodEnv({ name: `capacity-${n}`, namespace: ns }, () =>
          RunningCapacity.start([
            `--csi-address=${drivers[i]!.endpoint}`,
            `--capacity-namespace=${ns}`,
            `--capacity-node-name=${name(n)}`,
            '--capacity-ownerref-level=0',
            // Only events refresh within the test: no poll.
            '--capacity-poll-interval=10m',
            '--capacity-min-refresh-interval=100ms',
          ]),
        ),
      );
    }
  });

  after(async function () {
    await scheduler?.stop();
    await kcm?.stop();
    for (const l of loops) await l.stop();
    for (const c of cleanups) await c();
    for (const p of (await admin.list<Pod>(Resources.pods, { namespace: ns })).items) await admin.delete(Resources.pods, p.metadata!.name!, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
    for (const n of nodes) {
      await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
      await admin.delete(Resources.csiNodes, name(n)).catch(() => undefined);
    }
    await admin.delete(Resources.storageClasses, name('local')).catch(() => undefined);
    await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
  });

  const objects = async (): Promise<CSIStorageCapacity[]> => (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
  const byNode = async (): Promise<Record<string, { capacity: string; managedBy: string; owner: string; rv: string }>> =>
    Object.fromEntries(
      (await objects()).map((o) => [
        o.nodeTopology?.matchLabels?.[HOST] ?? '?',
        { capacity: String(o.capacity), managedBy: o.metadata?.labels?.['csi.storage.k8s.io/managed-by'] ?? '', owner: o.metadata?.ownerReferences?.map((r) => `${r.kind}/${r.name}`).join(',') ?? '', rv: o.metadata?.resourceVersion ?? '' },
      ]),
    );

  it('exactly one object per (class, node), with that node\'s figure, labelled and owned per node', async function () {
    await eventually(async () => {
      const all = await objects();
      expect(all).to.have.length(3);
      const got = await byNode();
      for (const [i, n] of nodes.entries()) {
        expect(got[name(n)], n).to.deep.include({ capacity: `${figures[i]! / GiB}Gi`, managedBy: `topovol-capacity-${name(n)}`, owner: `Pod/capacity-${n}` });
      }
      expect(all.every((o) => o.storageClassName === name('local') && Object.keys(o.nodeTopology?.matchLabels ?? {}).length === 1)).to.equal(true);
    });
  });

  it('a volume provisioned on one node changes only that node\'s object', async function () {
    const before = await byNode();
    drivers[0]!.setCapacity({}, 2n * GiB);
    await admin.create<PersistentVolume>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: name('pv1') },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: name('local'),
        csi: { driver: driverName, volumeHandle: 'pv1' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: HOST, operator: 'In', values: [name('n1')] }] }] } },
      },
    });
    await eventually(async () => expect((await byNode())[name('n1')]?.capacity).to.equal('2Gi'));
    const after = await byNode();
    for (const n of ['n2', 'n3']) expect(after[name(n)]?.rv, `${n} untouched`).to.equal(before[name(n)]?.rv);
    await deleteNow(admin, Resources.persistentVolumes, name('pv1'), undefined, { quiet: true });
  });

  it('the real kube-scheduler places a pod that needs more than two nodes have on the third', async function () {
    const config = path.join(cp.dir, `${ns}-scheduler.yaml`);
    writeFileSync(
      config,
      ['apiVersion: kubescheduler.config.k8s.io/v1', 'kind: KubeSchedulerConfiguration', 'leaderElection: { leaderElect: false }', `clientConnection: { kubeconfig: ${JSON.stringify(cp.kubeconfigPath)} }`, `profiles: [{ schedulerName: ${SCHEDULER} }]`, ''].join('\n'),
    );
    scheduler = await startKubeScheduler(cp, [`--config=${config}`]);
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'big', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, storageClassName: name('local') },
    });
    await admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'big', namespace: ns },
      spec: { schedulerName: SCHEDULER, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'big' } }] },
    });
    const selected = await eventually(
      async () => {
        const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'big', ns);
        const n = c.metadata?.annotations?.[SELECTED_NODE];
        if (!n) throw new Error(`no node selected yet\n${scheduler!.logTail(5)}`);
        return n;
      },
      120_000,
      250,
    );
    expect(selected).to.equal(name('n3'));
  });

  it('a node plugin unregistered for a moment (kubelet drops it from the CSINode) leaves its node\'s objects in place, as external-provisioner\'s fixed segment does', async function () {
    const ofClass = async (c: string): Promise<CSIStorageCapacity[]> => (await objects()).filter((o) => o.storageClassName === name(c) && o.nodeTopology?.matchLabels?.[HOST] === name('n1'));
    const [before] = await ofClass('local');
    expect(before, 'n1\'s object').to.not.equal(undefined);
    // What kubelet does when the plugin's registration socket goes: the driver leaves the CSINode.
    await admin.patch(Resources.csiNodes, name('n1'), undefined, 'merge', { spec: { drivers: [] } });
    // A class added meanwhile: its n1 object shows that n1's instance synced with the driver unregistered.
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('local2') }, provisioner: driverName, volumeBindingMode: 'WaitForFirstConsumer' });
    try {
      await eventually(async () => expect(await ofClass('local2')).to.have.length(1));
      expect((await ofClass('local')).map((o) => o.metadata?.uid), 'the same object, never deleted').to.deep.equal([before!.metadata?.uid]);
      await admin.patch(Resources.csiNodes, name('n1'), undefined, 'merge', { spec: { drivers: [{ name: driverName, nodeID: name('n1'), topologyKeys: [HOST] }] } });
    } finally {
      await admin.delete(Resources.storageClasses, name('local2')).catch(() => undefined);
    }
    await eventually(async () => expect((await objects()).filter((o) => o.storageClassName === name('local2'))).to.deep.equal([]));
    expect((await ofClass('local')).map((o) => o.metadata?.uid)).to.deep.equal([before!.metadata?.uid]);
  });

  it('a node\'s objects go with its instance\'s pod (owner reference, garbage collector): no room claimed for ever', async function () {
    kcm = await startKubeControllerManager(cp, ['garbage-collector-controller']);
    const [n2] = loops.splice(1, 1);
    await n2!.stop();
    await admin.delete(Resources.pods, 'capacity-n2', ns, { gracePeriodSeconds: 0 });
    await eventually(async () => expect(Object.keys(await byNode()).sort()).to.deep.equal([name('n1'), name('n3')]), 120_000, 500);
  });
});
