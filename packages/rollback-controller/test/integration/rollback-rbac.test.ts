import { expect } from 'chai';
import type { Event, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { EventRecorder, logger, Resources } from '@topovol/shared';
import { advanceRollback } from '../../src/rollback/advance-rollback.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { liveReads } from '../../src/rollback/rollback-server-reads.js';
import { createTestNamespace, describeRuleNecessity, pollUntil, sharedControlPlane, startKubeControllerManager, SuiteProcess } from '@topovol/testing';
import type { ManagedProcess, NecessityScenario } from '@topovol/testing';
import { rollbackDescriptor } from '../../src/rollback-descriptor.js';
import { LABEL_USAGE } from '../../src/rollback/marks.js';
import { bindPod, claim, createNode, failProvisioning, pod, PROVISIONER, provision, recordsOf, RunningRollback, seenByLoop, selectNode } from './rollback-harness.js';

/**
 * The rollback loop's ClusterRole exercised in one scenario (kube-controller-manager's binder binds
 * and releases, as in rollback.test.ts). Pod p: c1 provisioned on node a (PV patch: the unused
 * mark), c2 fails there (ProvisioningFailed Event: the event informer; c2's WaitForFirstConsumer
 * class is created after the loop's first list, so only the class watch makes its failure count), so c1 is rolled back (a
 * ProvisioningRollback created and its status updated; the namespace's pods listed, the volume and
 * the claim re-read live before the delete; claim delete and create; Events), and the finished record is forgotten
 * after --rollback-history-ttl (its delete). Pod q's volume is attached (a VolumeAttachment):
 * marked used and the rollback refused, and refused again after a change to q (event patch).
 * Pod s, created after the loop's first list (pod watch): e1 provisioned on node b, which is
 * cordoned after the start (node watch): rolled back.
 * Informers cover volumes, claims, pods, nodes, StorageClasses, VolumeAttachments, events and ProvisioningRollbacks.
 */
const rollbackScenario: NecessityScenario = async (client, admin) => {
  const ns = await createTestNamespace(admin, 'rbac-rb-');
  const cls = `${ns}-wffc`;
  // Before the claims: kube-controller-manager would record ProvisioningFailed for a missing class.
  await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete' } as never);
  for (const n of ['a', 'b']) await createNode(admin, `${ns}-${n}`);
  const ac = new AbortController();
  const nodeA = `${ns}-a`;
  const nodeB = `${ns}-b`;
  const late = `${ns}-late`;
  for (const c of ['c1', 'd1', 'd2', 'e1']) await admin.create(Resources.persistentVolumeClaims, claim(ns, c, cls));
  const p = await admin.create<Pod>(Resources.pods, pod(ns, 'p', ['c1', 'c2']));
  await admin.create<Pod>(Resources.pods, pod(ns, 'q', ['d1', 'd2']));
  for (const c of ['c1', 'd1', 'd2']) await selectNode(admin, ns, c, nodeA);
  // The scenario cordons a node; how long a node's state alone waits is not what it proves, and it
  // runs once per rule of the role.
  const loop = await RunningRollback.start(['--rollback-history-ttl=2s', '--rollback-node-state-wait=1s'], { client, waitForSync: false });
  let sPod: Pod | undefined;
  const get = (name: string): Promise<PersistentVolumeClaim> => admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
  const usage = async (pv: string): Promise<string | undefined> => (await admin.get<PersistentVolume>(Resources.persistentVolumes, pv)).metadata?.labels?.[LABEL_USAGE];
  // Steps finished, for the necessity check's wait (ScenarioRun.steps): a run without a rule is
  // judged by the step it stalls at, not by the whole scenario's length.
  const steps: number[] = [];
  const refusals = async (): Promise<Event[]> => (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: 'involvedObject.name=q,reason=ProvisioningRollbackRefused' })).items;
  const reached = (async () => {
    await loop.listed();
    // c2's class only exists after the loop's list: only the class watch shows it (so that c2's
    // failure, its selected node removed, counts as the provisioner's reschedule signal).
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: late }, provisioner: PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete' } as never);
    await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c2', late));
    await selectNode(admin, ns, 'c2', nodeA);
    steps.push(Date.now());
    // Pod s only exists after the initial list: only the pod watch shows it (so that e1 is seen
    // being provisioned for it).
    sPod = await admin.create<Pod>(Resources.pods, pod(ns, 's', ['e1']));
    await selectNode(admin, ns, 'e1', nodeB);
    await seenByLoop(loop, ns, 'e1');
    steps.push(Date.now());
    await provision(admin, ns, 'c1', nodeA, `${ns}-v1`);
    await provision(admin, ns, 'd1', nodeA, `${ns}-w1`);
    await provision(admin, ns, 'e1', nodeB, `${ns}-x1`);
    steps.push(Date.now());
    const c1 = await (async () => {
      let got: PersistentVolumeClaim | undefined;
      await pollUntil(async () => {
        got = await get('c1');
        expect(got.status?.phase).to.equal('Bound');
        expect(await usage(`${ns}-v1`)).to.equal('unused');
        expect(await usage(`${ns}-w1`)).to.equal('unused');
        expect(await usage(`${ns}-x1`)).to.equal('unused');
      }, ac.signal);
      return got!;
    })();
    steps.push(Date.now());
    // Node b is cordoned after the start (node watch): s, pinned there by e1, is rolled back.
    const e1 = await get('e1');
    await admin.patch(Resources.nodes, nodeB, undefined, 'merge', { spec: { unschedulable: true } });
    await pollUntil(async () => expect((await get('e1')).metadata?.uid).to.not.equal(e1.metadata?.uid), ac.signal);
    steps.push(Date.now());
    // q's volume gets attached (VolumeAttachment watch): used, so q's rollback is refused.
    await admin.create(Resources.volumeAttachments, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: `${ns}-w1` },
      spec: { attacher: PROVISIONER, nodeName: nodeA, source: { persistentVolumeName: `${ns}-w1` } },
    } as never);
    await pollUntil(async () => expect(await usage(`${ns}-w1`)).to.equal('used'), ac.signal);
    // And in the loop's cache, so that q's refusal names the mark (one Event, then patched), not
    // the attachment it saw before the mark (a second Event with another message).
    const cached = loop.informers.forResource<PersistentVolume>(Resources.persistentVolumes);
    await pollUntil(() => Promise.resolve(expect(cached.cache.get(`${ns}-w1`)?.metadata?.labels?.[LABEL_USAGE]).to.equal('used')), ac.signal);
    steps.push(Date.now());
    // Not ResourceExhausted: only the selected node's removal says c2 was given back to the
    // scheduler, which counts for a claim of a WaitForFirstConsumer class (the class watch).
    await failProvisioning(admin, ns, 'c2', `csinode.storage.k8s.io "${nodeA}" not found`);
    await failProvisioning(admin, ns, 'd2', 'rpc error: code = ResourceExhausted desc = node a is full');
    await pollUntil(async () => {
      expect((await get('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid);
      expect(await refusals()).to.have.length(1);
    }, ac.signal);
    steps.push(Date.now());
    await admin.patch(Resources.pods, 'q', ns, 'merge', { metadata: { labels: { touched: 'yes' } } });
    await pollUntil(async () => {
      const r = await refusals();
      expect(r).to.have.length(1);
      expect(r[0]?.count).to.be.at.least(2);
    }, ac.signal);
    steps.push(Date.now());
    // Both rollbacks finished and, past the history TTL, their records are gone.
    await pollUntil(async () => {
      for (const x of [p, sPod!]) expect(await recordsOf(admin, x.metadata!.uid!), `records of ${x.metadata?.name}`).to.deep.equal([]);
    }, ac.signal);
  })();
  return {
    reached,
    steps,
    stop: async () => {
      ac.abort();
      await loop.stop(2_000);
      // Leave no stuck pod behind: another suite's rollback loop (cluster-wide) would act on it.
      for (const p of ['p', 'q', 's']) await admin.delete(Resources.pods, p, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
      await admin.delete(Resources.volumeAttachments, `${ns}-w1`).catch(() => undefined);
      for (const c of [cls, late]) await admin.delete(Resources.storageClasses, c).catch(() => undefined);
      for (const n of ['a', 'b']) await admin.delete(Resources.nodes, `${ns}-${n}`).catch(() => undefined);
    },
  };
};

/**
 * The fence: a rollback recorded for pod p, then p scheduled before the claim's delete. The claim
 * is kept, and patched first (conditional on the resourceVersion checked) so that a delete sent
 * earlier cannot land after it. Driven through the actuator as the loop's ServiceAccount: the
 * loop's own timing cannot put the scheduling in that window on demand.
 */
const keptScenario: NecessityScenario = async (client, admin) => {
  const ns = await createTestNamespace(admin, 'rbac-rbk-');
  const c1 = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim(ns, 'c1', `${ns}-none`));
  const p = await admin.create<Pod>(Resources.pods, pod(ns, 'p', ['c1']));
  const events = new EventRecorder(client, 'topovol-rollback', 'test');
  const actuator = new RollbackActuator({ client, events, log: logger(), dryRun: false });
  const deps = { actuator, claimWatch: new DeletedClaimWatch(), reads: { ...liveReads(client, () => undefined), volumeUse: () => Promise.resolve(undefined) } };
  const ac = new AbortController();
  const reached = (async () => {
    const volume = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: `${ns}-v1` } } as PersistentVolume;
    await actuator.decide(p, { kind: 'rollback', why: 'test', pinned: [{ claim: c1, volume, node: `${ns}-a` }], attempt: 1, evidenceTime: Date.now() });
    await bindPod(admin, ns, 'p', `${ns}-a`);
    await pollUntil(async () => {
      const [r] = await recordsOf(admin, p.metadata!.uid!);
      if (r?.status?.phase !== 'Aborted') await advanceRollback(deps, r!, decideIntent(r!, () => undefined)).catch(() => undefined);
      expect((await recordsOf(admin, p.metadata!.uid!))[0]?.status?.phase).to.equal('Aborted');
      expect((await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c1', ns)).metadata?.annotations?.['rollback.topovol.io/kept-by']).to.be.a('string');
    }, ac.signal);
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await events.flush();
      await admin.delete(Resources.pods, 'p', ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
    },
  };
};

const STATEFUL_SETS = { group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet', namespaced: true };

/**
 * A claim owned with blockOwnerDeletion rolled back, re-created with that owner, which the shared
 * control plane's OwnerReferencesPermissionEnforcement admits only from who may update the owner's
 * finalizers. `ephemeral`: a generic ephemeral volume's claim, owned by its pod as the ephemeral
 * volume controller makes it (pods/finalizers). `statefulset`: a StatefulSet replica's claim under a
 * persistentVolumeClaimRetentionPolicy with whenDeleted: Delete, owned by its StatefulSet as the StatefulSet
 * controller makes it (`addControllerRef` in pkg/controller/statefulset/stateful_set_utils.go:
 * metav1.NewControllerRef, blockOwnerDeletion true; statefulsets/finalizers).
 */
const ownedClaimScenario =
  (owner: 'ephemeral' | 'statefulset'): NecessityScenario =>
  async (client, admin) => {
    const ns = await createTestNamespace(admin, owner === 'ephemeral' ? 'rbac-rbe-' : 'rbac-rbs-');
    const cls = `${ns}-wffc`;
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete' } as never);
    const nodeA = `${ns}-a`;
    await createNode(admin, nodeA);
    const spec = { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: '1Gi' } } };
    const podSpec = { schedulerName: 'nobody', containers: [{ name: 'c', image: 'busybox' }] };
    let podName: string;
    let claimName: string;
    let owned: { apiVersion: string; kind: string; name: string; uid: string; controller: true; blockOwnerDeletion: true };
    if (owner === 'ephemeral') {
      podName = 'p';
      claimName = 'p-scratch';
      const p = await admin.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: podName, namespace: ns }, spec: { ...podSpec, volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec } } }, { name: 'c2', persistentVolumeClaim: { claimName: 'c2' } }] } });
      owned = { apiVersion: 'v1', kind: 'Pod', name: podName, uid: p.metadata!.uid!, controller: true, blockOwnerDeletion: true };
    } else {
      // No StatefulSet controller runs here: the replica and its claim are made as it makes them.
      const labels = { app: 'web' };
      const set = await admin.create<KubeObject>(STATEFUL_SETS, {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'web', namespace: ns },
        spec: { replicas: 1, selector: { matchLabels: labels }, persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' }, template: { metadata: { labels }, spec: podSpec }, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec }] },
      } as KubeObject);
      podName = 'web-0';
      claimName = 'data-web-0';
      const setRef = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: set.metadata!.uid! };
      await admin.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: podName, namespace: ns, labels, ownerReferences: [{ ...setRef, controller: true, blockOwnerDeletion: true }] }, spec: { ...podSpec, volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }, { name: 'c2', persistentVolumeClaim: { claimName: 'c2' } }] } });
      owned = { ...setRef, controller: true, blockOwnerDeletion: true };
    }
    await admin.create(Resources.persistentVolumeClaims, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: claimName, namespace: ns, ownerReferences: [owned] }, spec });
    await admin.create(Resources.persistentVolumeClaims, claim(ns, 'c2', cls));
    for (const c of [claimName, 'c2']) await selectNode(admin, ns, c, nodeA);
    const loop = await RunningRollback.start([], { client, waitForSync: false });
    const ac = new AbortController();
    const get = (name: string): Promise<PersistentVolumeClaim> => admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
    const reached = (async () => {
      await loop.listed();
      await seenByLoop(loop, ns, claimName);
      await provision(admin, ns, claimName, nodeA, `${ns}-v1`);
      let old: PersistentVolumeClaim | undefined;
      await pollUntil(async () => {
        old = await get(claimName);
        expect(old.status?.phase).to.equal('Bound');
        expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, `${ns}-v1`)).metadata?.labels?.[LABEL_USAGE]).to.equal('unused');
      }, ac.signal);
      await failProvisioning(admin, ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      await pollUntil(async () => {
        const back = await get(claimName);
        expect(back.metadata?.uid).to.not.equal(old!.metadata?.uid);
        expect(back.metadata?.ownerReferences).to.deep.equal([owned]);
      }, ac.signal);
    })();
    return {
      reached,
      stop: async () => {
        ac.abort();
        await loop.stop(2_000);
        await admin.delete(Resources.pods, podName, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
        await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
        await admin.delete(Resources.nodes, nodeA).catch(() => undefined);
      },
    };
  };

const kcm = new SuiteProcess<ManagedProcess>();
describeRuleNecessity(rollbackDescriptor, rollbackScenario, {
  variants: [
    { name: 'kept claim', scenario: keptScenario, covers: (atom) => atom.group === '' && atom.resource === 'persistentvolumeclaims' && atom.verb === 'patch' },
    { name: 'generic ephemeral volume', scenario: ownedClaimScenario('ephemeral'), covers: (atom) => atom.group === '' && atom.resource === 'pods/finalizers' },
    { name: 'StatefulSet replica under a Delete retention policy', scenario: ownedClaimScenario('statefulset'), covers: (atom) => atom.group === 'apps' && atom.resource === 'statefulsets/finalizers' },
  ],
  before: async () => {
    await kcm.start(async () => startKubeControllerManager(await sharedControlPlane(), ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller'], ['--pvclaimbinder-sync-period=2s']));
  },
  after: async () => {
    await kcm.stop();
  },
});
