import { expect } from 'chai';
import { Resources, retryOnConflict } from '@topovol/shared';
import type { KubeClient, Node, PersistentVolume, Pod, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/shared/testing';
import { deleteNow, eventFor, getPV, getPVC, pv, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const zone = (z: string): NonNullable<PersistentVolume['spec']>['nodeAffinity'] => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [z] }] }] },
});

// Seed 001 "PV Controller Changes" on the real API server, plus the stuck cases of issue #4.
describe('pv-binder: delayed binding (WaitForFirstConsumer)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;
  let cls: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start();
  });
  after(async function () {
    await binder?.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'wffc-');
    cls = `${ns}-late`;
    await admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: cls },
      provisioner: 'example.com/csi',
      volumeBindingMode: 'WaitForFirstConsumer',
      allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a', 'b'] }] }],
    });
    for (const [n, z] of [['node-a', 'a'], ['node-b', 'b'], ['node-c', 'c']]) {
      await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: name(n!), labels: { 'topology.kubernetes.io/zone': z! } } });
    }
  });
  afterEach(async function () {
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    const all = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    await Promise.all(all.items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`)).map((v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!)));
    for (const n of ['node-a', 'node-b', 'node-c']) await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
  });

  const pod = (podName: string, claim: string, nodeName?: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: ns },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] },
  });

  it('does nothing before a consumer exists, then says it waits for the pod to be scheduled', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('free'), '1Gi', { class: cls }));
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await eventFor(admin, claim, 'WaitForFirstConsumer');
    await admin.create(Resources.pods, pod('p', 'c'));
    await eventFor(admin, claim, 'WaitForPodScheduled');
    const after = await getPVC(admin, ns, 'c');
    expect(after.spec?.volumeName ?? '').to.equal('');
    expect(after.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal(undefined);
    expect((await getPV(admin, name('free'))).spec?.claimRef).to.equal(undefined);
  });

  it('completes a PV pre-bound the way the scheduler does it', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.persistentVolumes, pv(name('local'), '1Gi', { class: cls, nodeAffinity: zone('a') }));
    // The VolumeBinding plugin's PreBind: claimRef with uid plus bound-by-controller. The binder may
    // be writing the PV's phase meanwhile; like the scheduler, re-read and retry on a conflict.
    await retryOnConflict(async () => {
      const v = await getPV(admin, name('local'));
      v.spec!.claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: claim.metadata?.uid, resourceVersion: claim.metadata?.resourceVersion };
      v.metadata!.annotations = { ...v.metadata!.annotations, 'pv.kubernetes.io/bound-by-controller': 'yes' };
      await admin.replace(Resources.persistentVolumes, v);
    });
    await eventually(async () => {
      const c = await getPVC(admin, ns, 'c');
      expect(c.status?.phase).to.equal('Bound');
      expect(c.spec?.volumeName).to.equal(name('local'));
    });
  });

  it('signals provisioning once the scheduler sets selected-node', async function () {
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('example.com/csi'));
  });

  it('refuses a selected node outside allowedTopologies and removes the annotation', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('node-c') } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined));
    expect((await eventFor(admin, claim, 'SelectedNodeNotAllowed')).type).to.equal('Warning');
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal(undefined);
  });

  it('removes a selected-node whose node no longer exists', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('vanished') } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined));
    expect((await eventFor(admin, claim, 'SelectedNodeGone')).type).to.equal('Warning');
  });

  it('binds the PV of the node a pod was placed on without the scheduler', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('on-a'), '1Gi', { class: cls, nodeAffinity: zone('a') }));
    await admin.create(Resources.persistentVolumes, pv(name('on-b'), '1Gi', { class: cls, nodeAffinity: zone('b') }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-b')));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).spec?.volumeName).to.equal(name('on-b')));
  });

  it('selects the node of a pod placed without the scheduler when no PV fits, so the provisioner runs', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-a')));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(name('node-a')));
    await eventFor(admin, claim, 'ScheduledWithoutScheduler');
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('example.com/csi'));
  });
});
