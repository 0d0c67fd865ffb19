import { expect } from 'chai';
import { projectPod, Resources, retryOnConflict } from '@topovol/shared';
import type { Event, KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { deleteNow, eventFor, getPV, getPVC, pv, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const GRACE_S = 2;
const zone = (z: string): NonNullable<PersistentVolume['spec']>['nodeAffinity'] => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [z] }] }] },
});

// KEP-490 "PV Controller Changes" on the real API server, plus the cases upstream leaves stuck
// (docs/divergences.md): selected nodes nobody will provision on, pods placed with spec.nodeName.
describe('pv-binder: delayed binding (WaitForFirstConsumer)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;
  let cls: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start([`--stale-selected-node-grace=${GRACE_S}s`]);
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
    // Nothing left for other suites' cluster-wide loops to act on.
    for (const p of (await admin.list<Pod>(Resources.pods, { namespace: ns })).items) await admin.delete(Resources.pods, p.metadata!.name!, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
    for (const c of (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items) await deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, ns);
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    const all = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    await Promise.all(all.items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`)).map((v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!)));
    for (const n of ['node-a', 'node-b', 'node-c']) await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
  });

  /** A pod using the claim; `unschedulable` keeps it waiting for a scheduler (none runs here anyway). */
  const pod = (podName: string, claim: string, nodeName?: string, opts: { unschedulable?: boolean } = {}): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: ns },
    spec: {
      nodeName,
      nodeSelector: opts.unschedulable ? { 'topovol.dev/nowhere': 'true' } : undefined,
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }],
    },
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

  it('removes a selected node outside allowedTopologies once the grace has passed', async function () {
    await admin.create(Resources.pods, pod('p', 'c', undefined, { unschedulable: true }));
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('node-c') } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined));
    const warning = await eventFor(admin, claim, 'SelectedNodeNotAllowed');
    expect(warning.type).to.equal('Warning');
    // Not before the grace: the first sync saw the problem, the removal came a grace later.
    expect(Date.parse(warning.lastTimestamp ?? '') - Date.parse(claim.metadata?.creationTimestamp ?? '')).to.be.at.least(GRACE_S * 1000 - 1000);
  });

  it('removes a selected-node whose node no longer exists once the grace has passed', async function () {
    await admin.create(Resources.pods, pod('p', 'c', undefined, { unschedulable: true }));
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('vanished') } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined));
    expect((await eventFor(admin, claim, 'SelectedNodeGone')).type).to.equal('Warning');
  });

  it('warns once, and selects nothing, for a pod placed with spec.nodeName on a node outside allowedTopologies', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-c')));
    const warning = await eventFor(admin, claim, 'NodeNotAllowedByStorageClass');
    expect(warning.type).to.equal('Warning');
    // Decided again (a toleration added to the pod is something the decision reads, and past the
    // grace): the same Warning, aggregated into its Event (count 2), never a selected node.
    await new Promise((r) => setTimeout(r, GRACE_S * 1000 + 1000));
    await admin.patch(Resources.pods, 'p', ns, 'merge', { spec: { tolerations: [{ key: 'test.topovol.dev/touched', operator: 'Exists', effect: 'NoSchedule' }] } });
    await eventually(async () => expect((await eventFor(admin, claim, 'NodeNotAllowedByStorageClass')).count, 'the Warning again, from a second decision').to.be.at.least(2));
    const c = await getPVC(admin, ns, 'c');
    expect(c.metadata?.annotations?.[SEL]).to.equal(undefined);
    const warnings = (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=c,type=Warning` })).items;
    expect(warnings.map((e) => e.reason)).to.deep.equal(['NodeNotAllowedByStorageClass']);
  });

  it('ignores a Succeeded pod placed with spec.nodeName: it will never use the volume', async function () {
    // The pod finished before its claim exists, so no sync can see it running.
    const done = await admin.create<Pod>(Resources.pods, pod('done', 'c', name('node-a')));
    await admin.replaceStatus(Resources.pods, { ...done, status: { phase: 'Succeeded' } });
    const seen = binder.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
    await eventually(() => expect(seen.cache.get(`${ns}/done`)?.status?.phase).to.equal('Succeeded'));
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await eventFor(admin, claim, 'WaitForFirstConsumer');
    await new Promise((r) => setTimeout(r, 1000));
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined);
  });

  it('acts for a pod placed with spec.nodeName on a node that joins later', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('late-node')));
    await eventFor(admin, claim, 'WaitForFirstConsumer');
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: name('late-node'), labels: { 'topology.kubernetes.io/zone': 'a' } } });
    try {
      await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(name('late-node')));
    } finally {
      await admin.delete(Resources.nodes, name('late-node')).catch(() => undefined);
    }
  });

  it('binds the PV of the node a pod was placed on without the scheduler', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('on-a'), '1Gi', { class: cls, nodeAffinity: zone('a') }));
    await admin.create(Resources.persistentVolumes, pv(name('on-b'), '1Gi', { class: cls, nodeAffinity: zone('b') }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-b')));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).spec?.volumeName).to.equal(name('on-b')));
  });

  it('binds nothing for a pod placed with spec.nodeName on a node the kubelet will refuse it on (its nodeSelector does not match), even with a free PV there', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('on-b'), '1Gi', { class: cls, nodeAffinity: zone('b') }));
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, { ...pod('p', 'c', name('node-b')), spec: { ...pod('p', 'c', name('node-b')).spec!, nodeSelector: { 'topology.kubernetes.io/zone': 'a' } } });
    const warning = await eventFor(admin, claim, 'PlacedPodRefusedByNode');
    expect(warning.type).to.equal('Warning');
    const c = await getPVC(admin, ns, 'c');
    expect([c.spec?.volumeName, c.metadata?.annotations?.[SEL]]).to.deep.equal([undefined, undefined]);
    expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, name('on-b'))).spec?.claimRef).to.equal(undefined);
  });

  it('selects the node of a pod placed without the scheduler when no PV fits, so the provisioner runs', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-a')));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(name('node-a')));
    await eventFor(admin, claim, 'ScheduledWithoutScheduler');
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('example.com/csi'));
  });

  it('selects a placed pod\'s node again only with backoff when the provisioner keeps giving it back (node full)', async function () {
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('p', 'c', name('node-a')));
    // The provisioner's side, as sig-storage-lib-external-provisioner's rescheduleProvisioning
    // after ResourceExhausted: every selected node is removed as soon as it shows up. Each removal is
    // timed before its request is sent, so the binder cannot have seen it earlier, and counted only
    // if it was made (a Conflict with the binder's own write on the claim removes nothing).
    const removals: number[] = [];
    await eventually(async () => {
      const c = await getPVC(admin, ns, 'c');
      if (c.metadata?.annotations?.[SEL]) {
        const at = Date.now();
        const removed = await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { metadata: { resourceVersion: c.metadata.resourceVersion, annotations: { [SEL]: null } } }).then(() => true, () => false);
        if (removed) removals.push(at);
      }
      expect(removals.length, 'selections removed').to.be.at.least(3);
    }, 60_000, 50);
    // Selected again 1 s after the first removal, then 2 s after the second, at the earliest: the
    // gaps are bounded below by the backoff however slow the machine is, where selecting at once
    // would have made one every poll.
    const gaps = removals.slice(1).map((t, i) => t - removals[i]!);
    expect(gaps[0], `gaps between removals: ${gaps.join(', ')} ms`).to.be.at.least(1_000);
    expect(gaps[1], `gaps between removals: ${gaps.join(', ')} ms`).to.be.at.least(2_000);
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(name('node-a')), 30_000);
  });
});
