import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { Event, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, describeRuleNecessity, metricSum, pollUntil } from '@topovol/testing';
import type { NecessityScenario } from '@topovol/testing';
import { pvBinderDescriptor } from '../../src/pv-binder-descriptor.js';
import { deleteNow, provisioningAttempt, pv, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
// Long enough for the first provisioning attempt, made once the binder has listed, to reach its cache
// on a loaded machine (a grace passed without it plans a removal the server refutes, and the
// control run fails).
const GRACE_S = 8;

/**
 * The binder's whole job in one scenario, so that every rule of its ClusterRole is exercised: a
 * static pair bound (PV and claim writes, both statuses; a claim bound by its writer gets only its
 * status written, the other way), a claim of a provisioned class signalled
 * (claim patch) with its ExternalProvisioning Event aggregated on a repeat (event create and
 * patch), the bound claim deleted so that the volume is released (the live read of the claim); a
 * selected node deleted (the node watch, then the live read of the node that confirms it is gone)
 * and a pod placed without the scheduler after the start (node and pod watches: a refused watch
 * leaves the informer with its first list). Informers cover list/watch of
 * volumes, claims, classes, nodes, pods and events; the events watch has its own scenario below.
 */
const binderScenario: NecessityScenario = async (client, admin) => {
  const ns = await createTestNamespace(admin, 'rbac-binder-');
  const ac = new AbortController();
  const manual = `${ns}-manual`;
  // Delayed binding: a claim whose selected node will vanish after the start (node watch).
  await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: `${ns}-late` }, provisioner: 'rbac.test.topovol.io', volumeBindingMode: 'WaitForFirstConsumer' } as never);
  for (const n of ['x', 'y']) await admin.create(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: `${ns}-${n}` } } as never);
  await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'sel', '1Gi', { class: `${ns}-late`, annotations: { [SEL]: `${ns}-x` } }));
  // The pod the scheduler selected node x for, still waiting: only the node's going makes x stale.
  await admin.create(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'waiting', namespace: ns }, spec: { nodeSelector: { 'rbac.test.topovol.io/nowhere': 'true' }, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'sel' } }] } } as never);
  await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'free', '1Gi', { class: `${ns}-late` }));
  // Started after the setup below it could fail in, so that a failed setup leaves no loop running.
  const loop = await RunningBinder.start(['--stale-selected-node-grace=1s'], { client, waitForSync: false });
  const claim = (name: string): Promise<PersistentVolumeClaim> => admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
  const signals = async (): Promise<Event[]> => (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: 'involvedObject.name=dynamic,reason=ExternalProvisioning' })).items;
  const reached = (async () => {
    // Created after the start: volumes, claims and classes reach the loop through its watches.
    await loop.listed();
    await admin.create(Resources.persistentVolumes, pv(`${ns}-pv`, '1Gi', { class: manual, policy: 'Retain' }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'static', '1Gi', { class: manual }));
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: `${ns}-dyn` }, provisioner: 'rbac.test.topovol.io', volumeBindingMode: 'Immediate' } as never);
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'dynamic', '1Gi', { class: `${ns}-dyn` }));
    // Bound by its writer already (volumeName and bind-completed): only its status is written,
    // by merge patch from the cache, where the static claim's follows a PUT of the bind's answer.
    // A class of its own, so that the static claim cannot take its volume first.
    await admin.create(Resources.persistentVolumes, pv(`${ns}-pre`, '1Gi', { class: `${manual}-pre`, policy: 'Retain' }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'pre', '1Gi', { class: `${manual}-pre`, volumeName: `${ns}-pre`, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }));
    await pollUntil(async () => {
      expect((await claim('static')).status?.phase).to.equal('Bound');
      expect((await claim('pre')).status?.phase).to.equal('Bound');
      expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, `${ns}-pv`)).status?.phase).to.equal('Bound');
      expect((await claim('dynamic')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('rbac.test.topovol.io');
      expect(await signals()).to.have.length(1);
      expect((await claim('sel')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('rbac.test.topovol.io');
    }, ac.signal);
    // Changes after the start reach the loop only through its watches: the node goes (removed from
    // the claim after the grace, once a live read of the node confirms it), and a pod placed on node
    // y without the scheduler uses the free claim.
    await admin.delete(Resources.nodes, `${ns}-x`);
    await pollUntil(async () => expect((await claim('sel')).metadata?.annotations?.[SEL]).to.equal(undefined), ac.signal);
    await admin.create(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'placed', namespace: ns }, spec: { nodeName: `${ns}-y`, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'free' } }] } } as never);
    await pollUntil(async () => expect((await claim('free')).metadata?.annotations?.[SEL]).to.equal(`${ns}-y`), ac.signal);
    // A change to the claim makes the binder sync it again: the same Event, count 2.
    await admin.patch(Resources.persistentVolumeClaims, 'dynamic', ns, 'merge', { metadata: { labels: { touched: 'yes' } } });
    // (The binder may sync it more than once: at least 2, in one Event.)
    await pollUntil(async () => {
      const s = await signals();
      expect(s).to.have.length(1);
      expect(s[0]?.count).to.be.at.least(2);
    }, ac.signal);
    await deleteNow(admin, Resources.persistentVolumeClaims, 'static', ns);
    await pollUntil(async () => expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, `${ns}-pv`)).status?.phase).to.equal('Released'), ac.signal);
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await loop.stop(2_000);
      // Nothing left for other suites' loops (they watch the whole cluster) to act on.
      for (const p of ['placed', 'waiting']) await admin.delete(Resources.pods, p, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
      for (const c of ['static', 'dynamic', 'sel', 'free', 'pre']) await deleteNow(admin, Resources.persistentVolumeClaims, c, ns).catch(() => undefined);
      for (const v of ['pv', 'pre']) await deleteNow(admin, Resources.persistentVolumes, `${ns}-${v}`).catch(() => undefined);
      await admin.delete(Resources.storageClasses, `${ns}-dyn`).catch(() => undefined);
      await admin.delete(Resources.storageClasses, `${ns}-late`).catch(() => undefined);
      for (const n of ['x', 'y']) await admin.delete(Resources.nodes, `${ns}-${n}`).catch(() => undefined);
    },
  };
};


/**
 * The external provisioner's Provisioning Events, watched: a claim whose provisioning is under way
 * (attempts every 500 ms, all after the start) keeps its selected-node past
 * --stale-selected-node-grace while an idle one loses it (binder-stale-selected-node.test.ts),
 * and the binder never even plans to clear it. Without the events watch it sees no attempt in its
 * cache and plans to clear both; the server's Events refute busy's removal (verify-on-server.ts),
 * which the refutation counter shows.
 */
const REFUTED = 'topovol_pv_binder_refuted_by_server_total';
const staleScenario: NecessityScenario = async (client, admin) => {
  const ns = await createTestNamespace(admin, 'rbac-stale-');
  const cls = `${ns}-late`;
  await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'rbac.test.topovol.io', volumeBindingMode: 'WaitForFirstConsumer' } as never);
  await admin.create(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: `${ns}-a` } } as never);
  await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'idle', '1Gi', { class: cls, annotations: { [SEL]: `${ns}-a` } }));
  const busy = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'busy', '1Gi', { class: cls, annotations: { [SEL]: `${ns}-a` } }));
  const loop = await RunningBinder.start([`--stale-selected-node-grace=${GRACE_S}s`], { client, waitForSync: false });
  const ac = new AbortController();
  const selected = async (c: string): Promise<string | undefined> => (await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c, ns)).metadata?.annotations?.[SEL];
  // The provisioner's attempts, all after the first list: seen only through the events watch.
  const runAttempts = async (): Promise<void> => {
    let attempt: Event | undefined;
    while (!ac.signal.aborted) {
      attempt = await provisioningAttempt(admin, busy, attempt);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  let attempts: Promise<void> = Promise.resolve();
  const refutedBefore = await metricSum(REFUTED, { check: 'selected_node' });
  const reached = (async () => {
    await loop.listed();
    attempts = runAttempts();
    await pollUntil(async () => expect(await selected('idle')).to.equal(undefined), ac.signal);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await selected('busy')).to.equal(`${ns}-a`);
    expect(await metricSum(REFUTED, { check: 'selected_node' }), 'a removal planned on a cache without the attempts').to.equal(refutedBefore);
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await attempts.catch(() => undefined);
      await loop.stop(2_000);
      await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
      await admin.delete(Resources.nodes, `${ns}-a`).catch(() => undefined);
    },
  };
};

/**
 * A claim's status right after its bind is a PUT of the whole claim the bind answered (cheaper for
 * kube-apiserver than a patch). Without `update` on claims' status that PUT is refused and the claim
 * is bound on the retry, whose status write is a merge patch decided on the cache: bound all the
 * same, but every binding a failed attempt, logged and counted. The end state here is the pair
 * bound at the first attempt.
 */
const BINDS = 'topovol_pv_binder_binds_total';
const firstAttemptScenario: NecessityScenario = async (client, admin) => {
  const ns = await createTestNamespace(admin, 'rbac-first-');
  const cls = `${ns}-manual`;
  const ac = new AbortController();
  const loop = await RunningBinder.start([], { client, waitForSync: false });
  const errorsBefore = await metricSum(BINDS, { result: 'error' });
  const reached = (async () => {
    await loop.listed();
    await admin.create(Resources.persistentVolumes, pv(`${ns}-pv`, '1Gi', { class: cls, policy: 'Retain' }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    await pollUntil(async () => expect((await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', ns)).status?.phase).to.equal('Bound'), ac.signal);
    expect(await metricSum(BINDS, { result: 'error' }), 'bind attempts that failed').to.equal(errorsBefore);
  })();
  return {
    reached,
    stop: async () => {
      ac.abort();
      await loop.stop(2_000);
      await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns).catch(() => undefined);
      await deleteNow(admin, Resources.persistentVolumes, `${ns}-pv`).catch(() => undefined);
    },
  };
};

describeRuleNecessity(pvBinderDescriptor, binderScenario, {
  variants: [
    { name: 'stale selected-node', scenario: staleScenario, covers: (atom) => atom.resource === 'events' && atom.verb === 'watch' },
    { name: 'bound at the first attempt', scenario: firstAttemptScenario, covers: (atom) => atom.resource === 'persistentvolumeclaims/status' && atom.verb === 'update' },
  ],
});
