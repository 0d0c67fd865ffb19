import { expect } from 'chai';
import { metricsRegistry, projectPod, Resources, retryOnConflict } from '@topovol/shared';
import type { KubeClient, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment } from '@topovol/shared';
import { createTestNamespace, eventually, installGeneratedRbac, queueIdle, sharedControlPlane, startKubeControllerManager, SuiteProcess, throwawayIdentity } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, LABEL_USAGE } from '../../src/rollback/marks.js';
import { bindPod, claim, createNode, eventFor, failProvisioning, loopCaches, pod, provision, recordsOf, RunningRollback, SEL, seenByLoop, selectNode, updateNodeStatus } from './rollback-harness.js';

const get = (admin: KubeClient, ns: string, name: string): Promise<PersistentVolumeClaim> => admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
const getPV = (admin: KubeClient, name: string): Promise<PersistentVolume> => admin.get<PersistentVolume>(Resources.persistentVolumes, name);

async function counter(name: string, labels: Record<string, string>): Promise<number> {
  const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
  return all.find((m) => m.name === name)?.values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value ?? 0;
}

// kubernetes #94217 on the real API server, with the real kube-controller-manager's
// persistentvolume binder and pv/pvc protection controllers; the test plays the scheduler's
// selected-node writes and the external provisioner.
describe('rollback: undo unused volumes of a pod that must move (kubernetes #94217)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  const kcm = new SuiteProcess<ManagedProcess>();
  let ns: string;
  let cls: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    const cp = await sharedControlPlane();
    admin = cp.adminClient();
    await kcm.start(() => startKubeControllerManager(cp, ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller'], ['--pvclaimbinder-sync-period=2s']));
  });
  after(async function () {
    await kcm.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'rb-');
    cls = `${ns}-wffc`;
    await admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: cls },
      provisioner: 'rollback.test.topovol.io',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    });
    for (const n of ['a', 'b']) await createNode(admin, name(n));
  });
  afterEach(async function () {
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    for (const n of ['a', 'b']) await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
  });

  /**
   * P with claims c1 and c2 (or c1 only); c1 provisioned on node a and marked unused. A c2 still
   * provisioning is undecided: the rollback would wait the grace period for it.
   */
  async function c1ProvisionedOnA(rollback: RunningRollback | undefined, sibling = true, c1Spec: Partial<NonNullable<PersistentVolumeClaim['spec']>> = {}, mark = 'unused', c1Meta: NonNullable<PersistentVolumeClaim['metadata']> = {}): Promise<{ p: Pod; c1: PersistentVolumeClaim; v1: PersistentVolume }> {
    expect(rollback).to.not.equal(undefined);
    const c1Claim = claim(ns, 'c1', cls);
    await admin.create(Resources.persistentVolumeClaims, { ...c1Claim, metadata: { ...c1Claim.metadata, ...c1Meta }, spec: { ...c1Claim.spec, ...c1Spec } });
    if (sibling) await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c2', cls));
    const p = await admin.create<Pod>(Resources.pods, pod(ns, 'p', sibling ? ['c1', 'c2'] : ['c1']));
    await selectNode(admin, ns, 'c1', name('a'));
    if (sibling) await selectNode(admin, ns, 'c2', name('a'));
    await seenByLoop(rollback!, ns, 'c1');
    await provision(admin, ns, 'c1', name('a'), name('v1'));
    const c1 = await eventually(async () => {
      const c = await get(admin, ns, 'c1');
      expect(c.status?.phase).to.equal('Bound');
      return c;
    });
    const v1 = await eventually(async () => {
      const v = await getPV(admin, name('v1'));
      expect(v.metadata?.labels?.[LABEL_USAGE]).to.equal(mark);
      return v;
    });
    if (mark === 'unused') expect(v1.metadata?.annotations).to.include({ [ANN_PROVISIONED_FOR_NODE]: name('a'), [ANN_PROVISIONED_FOR_POD]: p.metadata?.uid });
    return { p, c1, v1 };
  }

  /**
   * web-1, a pod of ReplicaSet web using claim c1, provisioned on node a and marked unused, seen by
   * every loop in `seenBy`. `replaceOnA` then does what a lost node does to it: web-1 is bound to a,
   * force-deleted before it reports anything, replaced by web-2, and node a is deleted.
   */
  async function webReplicaUnusedOnA(seenBy: RunningRollback[]): Promise<{ c1: PersistentVolumeClaim; replaceOnA: () => Promise<Pod> }> {
    const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: `${ns}-rs-uid`, controller: true };
    await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c1', cls));
    const p1 = await admin.create<Pod>(Resources.pods, { ...pod(ns, 'web-1', ['c1']), metadata: { name: 'web-1', namespace: ns, ownerReferences: [owner] } });
    await selectNode(admin, ns, 'c1', name('a'));
    for (const loop of seenBy) await seenByLoop(loop, ns, 'c1');
    await provision(admin, ns, 'c1', name('a'), name('v1'));
    await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('unused'));
    const c1 = await get(admin, ns, 'c1');
    const replaceOnA = async (): Promise<Pod> => {
      await bindPod(admin, ns, 'web-1', name('a'));
      await admin.delete(Resources.pods, 'web-1', ns, { gracePeriodSeconds: 0 });
      const p2 = await admin.create<Pod>(Resources.pods, { ...p1, metadata: { name: 'web-2', namespace: ns, ownerReferences: [owner] } });
      await admin.delete(Resources.nodes, name('a'));
      return p2;
    };
    return { c1, replaceOnA };
  }

  /** v1 ends marked used for `why`, web-2's rollback is refused, and c1 is the claim it was. */
  async function expectKept(p2: Pod, c1: PersistentVolumeClaim, why: RegExp): Promise<void> {
    await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.annotations?.['rollback.topovol.io/used-because']).to.match(why));
    expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('used');
    await eventFor(admin, p2, 'ProvisioningRollbackRefused');
    expect((await get(admin, ns, 'c1')).metadata?.uid, 'the claim was kept').to.equal(c1.metadata?.uid);
  }

  describe('with the controller running', function () {
    let rollback: RunningRollback;
    before(async function () {
      rollback = await RunningRollback.start();
    });
    after(async function () {
      await rollback?.stop();
    });

    it('rolls back c1 when c2 fails on node a, and both end on node b', async function () {
      const before = await counter('topovol_rollback_rollbacks_total', { result: 'rolled_back' });
      const { p, c1 } = await c1ProvisionedOnA(rollback);
      await failProvisioning(admin, ns, 'c2', 'failed to provision volume with StorageClass: rpc error: code = ResourceExhausted desc = node a is full');
      // c1 comes back Pending, with the same name, labels and annotations, and no volume.
      const again = await eventually(async () => {
        const c = await get(admin, ns, 'c1');
        expect(c.metadata?.uid).to.not.equal(c1.metadata?.uid);
        return c;
      }, 60_000);
      expect(again.spec?.volumeName ?? '').to.equal('');
      expect(again.metadata?.annotations?.[SEL]).to.equal(undefined);
      expect(again.metadata?.annotations?.['example.com/keep']).to.equal('me');
      expect(again.metadata?.labels).to.deep.equal({ app: 'rollback-test' });
      await eventually(async () => expect((await get(admin, ns, 'c1')).status?.phase).to.equal('Pending'));
      // The old volume goes to its reclaim policy (Released; the external deleter would delete it).
      await eventually(async () => expect((await getPV(admin, name('v1'))).status?.phase).to.equal('Released'), 60_000);
      const why = await eventFor(admin, p, 'ProvisioningRollback');
      expect(why.message, 'rolled back for the failed sibling, not for anything else').to.match(/claim c2 .*ResourceExhausted/);
      // Events on the pod, the claim and the PV say what happened to each.
      await eventFor(admin, c1, 'ProvisioningRollback');
      await eventFor(admin, await getPV(admin, name('v1')), 'ProvisioningRollback');
      await eventFor(admin, again, 'ClaimRecreated');
      // The rollback's own record says what it did, and that it is done.
      const [record] = await eventually(async () => {
        const rs = await recordsOf(admin, p.metadata!.uid!);
        expect(rs.map((r) => r.status?.phase)).to.deep.equal(['Completed']);
        return rs;
      });
      expect(record!.spec.claims.map((c) => [c.name, c.uid, c.volume])).to.deep.equal([['c1', c1.metadata?.uid, name('v1')]]);
      // The namespace by uid, so that a namespace of that name made again later gets nothing.
      expect(record!.spec.pod.namespaceUID).to.equal((await admin.get(Resources.namespaces, ns)).metadata?.uid);
      expect(record!.status?.claims?.map((c) => [c.name, c.state, c.uid])).to.deep.equal([['c1', 'Recreated', again.metadata?.uid]]);
      await eventFor(admin, p, 'ProvisioningRollbackCompleted');
      expect(await counter('topovol_rollback_rollbacks_total', { result: 'rolled_back' })).to.equal(before + 1);
      // Retain while its claim went; Delete given back once the claim was gone and the loop's pod
      // watch (and the replay of what it had not delivered) showed no pod of it scheduled meanwhile.
      const v1 = await getPV(admin, name('v1'));
      expect(v1.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
      expect(v1.metadata?.annotations ?? {}).to.not.have.any.keys('rollback.topovol.io/reclaim-policy-held', 'rollback.topovol.io/retained-because');
      // The scheduler now picks node b for both; the provisioner provisions there; both bind.
      await selectNode(admin, ns, 'c1', name('b'));
      await selectNode(admin, ns, 'c2', name('b'));
      await provision(admin, ns, 'c1', name('b'), name('v1b'));
      await provision(admin, ns, 'c2', name('b'), name('v2b'));
      for (const [c, v] of [['c1', 'v1b'], ['c2', 'v2b']] as const) {
        await eventually(async () => {
          const got = await get(admin, ns, c);
          expect(got.status?.phase).to.equal('Bound');
          expect(got.spec?.volumeName).to.equal(name(v));
        }, 60_000);
      }
    });

    it('never rolls back when the pod has run: the volume is marked used, and an Event says why', async function () {
      const { p, c1 } = await c1ProvisionedOnA(rollback);
      const running = await admin.get<Pod>(Resources.pods, 'p', ns);
      running.status = { ...running.status, phase: 'Running' };
      await admin.replaceStatus(Resources.pods, running);
      await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('used'));
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      const refused = await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect(refused.message).to.match(/marked used|has run/);
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
    });

    // A CSI driver without attach (attachRequired: false, as most node-local drivers) gets no
    // VolumeAttachment, and the kubelet lists only attachable volumes in volumesInUse: a pod's
    // scheduling is then the only trace of use. Here the pod is bound, its node goes away before its
    // kubelet reports any status, the pod is force-deleted, and its ReplicaSet makes another.
    it('a pod that was scheduled and deleted before reporting anything: its replacement is not rolled back', async function () {
      const { c1, replaceOnA } = await webReplicaUnusedOnA([rollback]);
      await expectKept(await replaceOnA(), c1, /was scheduled to node/);
    });

    it('a gap in the pod watch (its informer lists again): a volume marked unused is no longer vouched for, and not rolled back', async function () {
      const { p, c1 } = await c1ProvisionedOnA(rollback);
      // What a 410 Gone does to the watch (an expired resourceVersion), without waiting for one.
      const pods = rollback!.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
      await pods.stop();
      pods.start();
      await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.annotations?.['rollback.topovol.io/used-because']).to.match(/not watched without a gap/));
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
    });

    // A cache that lags: the loop's pod watch is behind (here: stopped, so no relist marks a gap)
    // while another pod with the claim is created, scheduled and deleted. The decision and the
    // delete's live checks (the pods that exist now) cannot see it; the server's replay of the pod
    // events since the watch's resourceVersion, read right before the delete, does.
    it('a pod that used the claim and went while the loop\'s pod watch lagged: found in the replay before the delete, the claim kept', async function () {
      const { p, c1 } = await c1ProvisionedOnA(rollback);
      const pods = rollback!.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
      await pods.stop();
      try {
        await admin.create<Pod>(Resources.pods, pod(ns, 'q', ['c1']));
        await bindPod(admin, ns, 'q', name('a'));
        await admin.delete(Resources.pods, 'q', ns, { gracePeriodSeconds: 0 });
        await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
        const done = await eventually(async () => {
          const [r] = await recordsOf(admin, p.metadata!.uid!);
          expect(r?.status?.phase).to.equal('Aborted');
          return r!;
        }, 60_000);
        expect(done.status?.claims?.find((c) => c.name === 'c1')?.message).to.match(/pod .*\/q using claim c1 was scheduled to node .* \(seen in the pod events since the loop's watch\)/);
        expect((await get(admin, ns, 'c1')).metadata?.uid, 'the claim kept').to.equal(c1.metadata?.uid);
      } finally {
        pods.start();
      }
    });

    it('a claim pre-populated from another claim (a clone) is never rolled back: a new provisioning may not hold the same data', async function () {
      const { p, c1, v1 } = await c1ProvisionedOnA(rollback, true, { dataSource: { kind: 'PersistentVolumeClaim', name: 'source' } }, 'used');
      expect(v1.metadata?.annotations?.['rollback.topovol.io/used-because']).to.match(/pre-populated from PersistentVolumeClaim source/);
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
    });

    it('a node reporting the volume in volumesInUse marks it used and blocks the rollback', async function () {
      const { p, c1, v1 } = await c1ProvisionedOnA(rollback);
      await updateNodeStatus(admin, name('a'), { volumesInUse: [`kubernetes.io/csi/${v1.spec!.csi!.driver}^${v1.spec!.csi!.volumeHandle}`] });
      await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('used'));
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
    });

    it('a VolumeAttachment marks the volume used and blocks the rollback', async function () {
      const { p, c1 } = await c1ProvisionedOnA(rollback);
      await admin.create<VolumeAttachment>(Resources.volumeAttachments, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'VolumeAttachment',
        metadata: { name: name('va') },
        spec: { attacher: 'rollback.test.topovol.io', nodeName: name('a'), source: { persistentVolumeName: name('v1') } },
      });
      await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('used'));
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
      await admin.delete(Resources.volumeAttachments, name('va'));
    });

    it('rolls back when node a is deleted', async function () {
      const { c1 } = await c1ProvisionedOnA(rollback, false);
      await admin.delete(Resources.nodes, name('a'));
      await eventually(async () => expect((await get(admin, ns, 'c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
    });

    it('rolls back when node a is tainted NoSchedule and the pod does not tolerate it', async function () {
      const { c1 } = await c1ProvisionedOnA(rollback, false);
      await retryOnConflict(async () => {
        const n = await admin.get<Node>(Resources.nodes, name('a'));
        n.spec = { ...n.spec, taints: [{ key: 'example.com/maintenance', effect: 'NoSchedule' }] };
        await admin.replace(Resources.nodes, n);
      });
      await eventually(async () => expect((await get(admin, ns, 'c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
    });

    /** P with claim c1, provisioned on node a, bound and marked unused. */
    const c1BoundOnA = async (): Promise<PersistentVolumeClaim> => {
      await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c1', cls));
      await admin.create<Pod>(Resources.pods, pod(ns, 'p', ['c1']));
      await selectNode(admin, ns, 'c1', name('a'));
      await seenByLoop(rollback, ns, 'c1');
      await provision(admin, ns, 'c1', name('a'), name('v1'));
      const c1 = await eventually(async () => {
        const c = await get(admin, ns, 'c1');
        expect(c.status?.phase).to.equal('Bound');
        return c;
      });
      await eventually(async () => expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal('unused'));
      return c1;
    };
    /**
     * What kube-scheduler v1.37 writes when no node can take the pod because of the volume's node
     * affinity (before kubernetes/kubernetes#129887 it said "had volume node affinity conflict"),
     * with the node it nominated the pod to, if any (it writes the nomination alone when a later
     * attempt binds the pod there: KEP-5278).
     */
    const reportUnschedulable = (nominatedNodeName?: string): Promise<void> =>
      retryOnConflict(async () => {
        const p = await admin.get<Pod>(Resources.pods, 'p', ns);
        const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        p.status = { ...p.status, phase: 'Pending', nominatedNodeName, conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', lastTransitionTime: now, message: "0/2 nodes are available: 1 Insufficient memory, 1 node(s) didn't match PersistentVolume's node affinity. preemption: 0/2 nodes are available." }] };
        await admin.replaceStatus(Resources.pods, p);
      });

    it('rolls back when the scheduler reports that the volume\'s node affinity excludes every node that could take the pod', async function () {
      const c1 = await c1BoundOnA();
      await reportUnschedulable();
      await eventually(async () => expect((await get(admin, ns, 'c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
      const [e] = [await eventFor(admin, await admin.get<Pod>(Resources.pods, 'p', ns), 'ProvisioningRollback')];
      expect(e.message).to.contain("didn't match PersistentVolume's node affinity");
    });

    // The condition stays until the pod is bound; a later attempt that binds the pod to node a
    // nominates it there first, while its PreBind waits for the pod's other claims.
    it("the scheduler's report with the pod nominated to a node since rolls nothing back; once the nomination is cleared (that binding failed), it does", async function () {
      const c1 = await c1BoundOnA();
      await reportUnschedulable(name('a'));
      // Its handler runs right after the cache shows it: the pod was decided on with its nomination.
      await eventually(() => expect(loopCaches(rollback).pods.cache.get(`${ns}/p`)?.status?.nominatedNodeName).to.equal(name('a')));
      await new Promise((r) => setImmediate(r));
      await queueIdle('rollback');
      expect((await get(admin, ns, 'c1')).metadata?.uid, 'nominated: nothing rolled back').to.equal(c1.metadata?.uid);
      expect(await recordsOf(admin, (await admin.get<Pod>(Resources.pods, 'p', ns)).metadata!.uid!)).to.deep.equal([]);
      await retryOnConflict(async () => {
        const p = await admin.get<Pod>(Resources.pods, 'p', ns);
        p.status = { ...p.status, nominatedNodeName: undefined };
        await admin.replaceStatus(Resources.pods, p);
      });
      await eventually(async () => expect((await get(admin, ns, 'c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
    });

    it('never touches a statically created PV', async function () {
      await admin.create(Resources.persistentVolumeClaims, claim(ns, 'static', cls));
      await admin.create<Pod>(Resources.pods, pod(ns, 'ps', ['static']));
      await selectNode(admin, ns, 'static', name('a'));
      // An administrator's PV: never carried provisioned-by, so the controller never saw it provisioned.
      const v = await provision(admin, ns, 'static', name('a'), name('static'), { administrator: true });
      await eventually(async () => expect((await get(admin, ns, 'static')).status?.phase).to.equal('Bound'));
      // The sentinel: a provisioned, unused volume stuck on the same node, rolled back by the same trigger.
      const { c1 } = await c1ProvisionedOnA(rollback, false);
      await admin.delete(Resources.nodes, name('a'));
      await eventually(async () => expect((await get(admin, ns, 'c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
      const after = await getPV(admin, name('static'));
      expect(after.metadata?.labels?.[LABEL_USAGE]).to.equal(undefined);
      const ours = Object.keys({ ...after.metadata?.labels, ...after.metadata?.annotations }).filter((k) => k.startsWith('rollback.topovol.io/'));
      expect(ours, 'no rollback mark of any kind on the static PV').to.deep.equal([]);
      expect(after.spec?.claimRef?.uid).to.equal(v.spec?.claimRef?.uid);
      expect((await get(admin, ns, 'static')).status?.phase).to.equal('Bound');
    });
  });

  // The deleted pod's use must be recorded by the handler (its last state) when no reconcile ran
  // while it existed: here deterministically, because the replica that sees it stands by (its
  // handlers run, its workers do not start before it leads) and the leader is stopped meanwhile.
  it('a standby that saw a pod scheduled and deleted while no worker ran: once it leads, the replacement is not rolled back', async function () {
    const leader = await RunningRollback.start();
    const standby = await RunningRollback.start([], { standby: true });
    try {
      const { c1, replaceOnA } = await webReplicaUnusedOnA([leader, standby]);
      await leader.stop();

      const p2 = await replaceOnA();
      const pods = standby.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
      await eventually(() => expect(pods.cache.get(`${ns}/web-2`), 'the standby has seen the replacement').to.not.equal(undefined));
      await eventually(() => expect(pods.cache.get(`${ns}/web-1`), 'and the deletion').to.equal(undefined));

      standby.lead();
      await expectKept(p2, c1, /was scheduled to node .*and was deleted/);
    } finally {
      await leader.stop();
      await standby.stop();
      await admin.delete(Resources.pods, 'web-2', ns).catch(() => undefined);
    }
  });

  // Its own loop, as an identity of its own with the rollback's ClusterRole: the refusal it meets is
  // by design, and the end-of-run RBAC check holds the loop's own ServiceAccount to never being refused.
  it("a claim the loop could not create again is not deleted: an operator's owner reference with blockOwnerDeletion, which OwnerReferencesPermissionEnforcement admits only from who may update the owner's finalizers", async function () {
    await installGeneratedRbac();
    const identity = await throwawayIdentity('rollback-installed', ['topovol-rollback'], { group: '', resource: 'persistentvolumeclaims', verb: 'create' });
    const loop = await RunningRollback.start([], { client: identity.client });
    try {
      // controller-runtime's SetControllerReference sets blockOwnerDeletion; the loop's role may
      // update pods/finalizers only (a generic ephemeral volume's claim), not a ConfigMap's.
      const owner = await admin.create<KubeObject>(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'operator-owned', namespace: ns } });
      const ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'operator-owned', uid: owner.metadata!.uid!, controller: true, blockOwnerDeletion: true }];
      const { p, c1 } = await c1ProvisionedOnA(loop, true, {}, 'unused', { ownerReferences });
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
      const refused = await eventFor(admin, p, 'ProvisioningRollbackRefused');
      expect(refused.message).to.contain('claim c1 could not be created again once deleted').and.contain('cannot set blockOwnerDeletion');
      expect((await get(admin, ns, 'c1')).metadata?.uid, 'the claim was kept').to.equal(c1.metadata?.uid);
      expect(await recordsOf(admin, p.metadata!.uid!), 'nothing recorded, nothing deleted').to.deep.equal([]);
    } finally {
      await loop.stop();
      await identity.cleanup();
    }
  });

  /** Pod p of claims `c1` and c2: c1 provisioned on node a and bound, then c2 fails there. The bound c1, as it was then. */
  const c1BoundThenC2Fails = async (rollback: RunningRollback, c1: PersistentVolumeClaim): Promise<PersistentVolumeClaim> => {
    await admin.create(Resources.persistentVolumeClaims, c1);
    await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c2', cls));
    await admin.create<Pod>(Resources.pods, pod(ns, 'p', ['c1', 'c2']));
    await selectNode(admin, ns, 'c1', name('a'));
    await seenByLoop(rollback, ns, 'c1');
    await provision(admin, ns, 'c1', name('a'), name('v1'));
    await eventually(async () => expect((await get(admin, ns, 'c1')).status?.phase).to.equal('Bound'));
    const bound = await get(admin, ns, 'c1');
    await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = full');
    return bound;
  };

  it('--dry-run writes nothing and reports the same decisions', async function () {
    const rollback = await RunningRollback.start(['--dry-run']);
    try {
      const dry = await counter('topovol_rollback_rollbacks_total', { result: 'dry_run' });
      const c1 = await c1BoundThenC2Fails(rollback, claim(ns, 'c1', cls));
      // The rollback is decided and reported (metric, log), but nothing is written.
      await eventually(async () => expect(await counter('topovol_rollback_rollbacks_total', { result: 'dry_run' })).to.equal(dry + 1), 60_000);
      expect((await getPV(admin, name('v1'))).metadata?.labels?.[LABEL_USAGE]).to.equal(undefined);
      expect((await get(admin, ns, 'c1')).metadata?.uid).to.equal(c1.metadata?.uid);
      const p = await admin.get<Pod>(Resources.pods, 'p', ns);
      expect(await recordsOf(admin, p.metadata!.uid!), 'no rollback recorded').to.deep.equal([]);
    } finally {
      await rollback.stop();
      // Leave no stuck pod behind for the controllers of later tests to (rightly) roll back.
      await admin.delete(Resources.pods, 'p', ns).catch(() => undefined);
    }
  });

  // A dry run is how an operator previews the loop: it runs the checks a real run makes before
  // anything is recorded (the claims read from the server, their copies sent as server-side dry runs).
  it("--dry-run reports a claim held by someone else's finalizer as refused, as a real run would, not as a rollback", async function () {
    const HOLD = 'backup.example.com/hold';
    const rollback = await RunningRollback.start(['--dry-run']);
    try {
      const dry = await counter('topovol_rollback_rollbacks_total', { result: 'dry_run' });
      const refused = await counter('topovol_rollback_rollbacks_total', { result: 'refused' });
      const held = claim(ns, 'c1', cls);
      await c1BoundThenC2Fails(rollback, { ...held, metadata: { ...held.metadata, finalizers: [HOLD] } });
      // Reported (the metric, a log line), not written: a dry run writes no Events either.
      await eventually(async () => expect(await counter('topovol_rollback_rollbacks_total', { result: 'refused' })).to.be.greaterThan(refused), 60_000);
      await queueIdle('rollback');
      expect(await counter('topovol_rollback_rollbacks_total', { result: 'dry_run' }), 'not reported as a rollback').to.equal(dry);
    } finally {
      await rollback.stop();
      await admin.delete(Resources.pods, 'p', ns).catch(() => undefined);
      await admin.patch(Resources.persistentVolumeClaims, 'c1', ns, 'merge', { metadata: { finalizers: null } }).catch(() => undefined);
    }
  });
});
