import { expect } from 'chai';
import { CLAIM_UID_INDEX, MAX_CACHED_EVENTS_PER_CLAIM, metricsRegistry, PROVISIONING_EVENTS, Resources } from '@topovol/shared';
import type { Event, KubeClient, Pod, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, parsePrometheusText, sharedControlPlane } from '@topovol/testing';
import { deleteNow, eventFor, getPVC, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const GRACE_S = 2;

/** A registry sample, as a scrape of /metrics would read it (0 when absent). */
async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const s = parsePrometheusText(await metricsRegistry.metrics()).find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

/** An Event a tenant may write in its namespace: a `Provisioning` one about `about`, last written 10 minutes ago. */
function tenantEvent(ns: string, name: string, about: { namespace: string; name: string; uid: string }): Event {
  const then = new Date(Date.now() - 600_000).toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: ns },
    involvedObject: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...about },
    reason: 'Provisioning',
    message: 'External provisioner is provisioning volume for claim',
    type: 'Normal',
    firstTimestamp: then,
    lastTimestamp: then,
    count: 1,
    source: { component: 'example.com/csi' },
  };
}

// Anyone who may create Events in a namespace may create as many as its quota allows (none without
// one), naming any claim or uid. The binder caches only a bounded number per claim it has cached
// (ClaimEventBudget), so a flood cannot take its heap to its limit, and the ones it leaves out
// never let it remove a selected node under a provisioner at work: the removal reads the claim's
// Events from the server first (verify-on-server.ts).
describe('pv-binder: a namespace flooding Events', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let binder: RunningBinder | undefined;
  let ns: string;
  let other: string;
  let cls: string;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    ns = await createTestNamespace(admin, 'flood-');
    other = await createTestNamespace(admin, 'flood-other-');
    cls = `${ns}-late`;
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/csi', volumeBindingMode: 'WaitForFirstConsumer' });
  });
  after(async function () {
    await binder?.stop();
    for (const n of [ns, other]) {
      for (const p of (await admin.list<Pod>(Resources.pods, { namespace: n })).items) await admin.delete(Resources.pods, p.metadata!.name!, n, { gracePeriodSeconds: 0 }).catch(() => undefined);
      for (const c of (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: n })).items) await deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, n);
    }
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
  });

  const pod = (podName: string, claim: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: ns },
    spec: { nodeSelector: { 'topovol.dev/nowhere': 'true' }, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] },
  });

  it('caches at most the bound per claim (listed and watched), none about claims it has not cached; the flood delays only its own claim, until it goes', async function () {
    // Two claims whose selected node is gone, each with a pod waiting; Events about the first only.
    await admin.create(Resources.pods, pod('p1', 'flooded'));
    await admin.create(Resources.pods, pod('p2', 'quiet'));
    const flooded = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'flooded', '1Gi', { class: cls, annotations: { [SEL]: `${ns}-vanished` } }));
    const about = { namespace: ns, name: 'flooded', uid: flooded.metadata!.uid! };
    const create = (n: number, make: (i: number) => Event): Promise<unknown> => Promise.all(Array.from({ length: n }, (_, i) => admin.create(Resources.events, make(i))));
    // Before the binder starts (its first list): Events naming the claim, made-up uids, and the
    // claim's name and uid in another namespace (the API server wants an Event's namespace to be its
    // object's, for Events without eventTime).
    await create(40, (i) => tenantEvent(ns, `listed-${i}`, about));
    await create(40, (i) => tenantEvent(ns, `made-up-${i}`, { ...about, uid: `made-up-${i}` }));
    await create(20, (i) => tenantEvent(other, `elsewhere-${i}`, { ...about, namespace: other }));
    const leftBefore = await sample('topovol_informer_objects_left_out_total', { resource: 'events' });

    binder = await RunningBinder.start([`--stale-selected-node-grace=${GRACE_S}s`]);
    const events = binder.informers.lookup<Event>(Resources.events, { fieldSelector: PROVISIONING_EVENTS })!;
    expect(events, 'the binder watches Provisioning Events').to.not.equal(undefined);
    // What it caches of these two namespaces (other suites' Events may be there too).
    const ours = (): Event[] => events.cache.list().filter((e) => e.metadata?.namespace === ns || e.metadata?.namespace === other);
    // The Events listed before the claims were are listed again once they are: the bound fills.
    await eventually(() => expect(events.cache.byIndex(CLAIM_UID_INDEX, about.uid)).to.have.length(MAX_CACHED_EVENTS_PER_CLAIM), 30_000);
    expect(ours()).to.have.length(MAX_CACHED_EVENTS_PER_CLAIM);
    // Watched: more of each, none taken in.
    await create(40, (i) => tenantEvent(ns, `watched-${i}`, about));
    await create(40, (i) => tenantEvent(ns, `made-up-w-${i}`, { ...about, uid: `made-up-w-${i}` }));
    await eventually(async () => expect(await sample('topovol_informer_objects_left_out_total', { resource: 'events' })).to.be.at.least(leftBefore + 40 + 40 + 20 + 40 + 40 - MAX_CACHED_EVENTS_PER_CLAIM), 30_000);
    expect(ours()).to.have.length(MAX_CACHED_EVENTS_PER_CLAIM);

    // The other claim is not held up by the flood: its stale selected node goes after the grace.
    const quiet = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'quiet', '1Gi', { class: cls, annotations: { [SEL]: `${ns}-vanished` } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'quiet')).metadata?.annotations?.[SEL]).to.equal(undefined), 60_000);
    expect((await eventFor(admin, quiet, 'SelectedNodeGone')).type).to.equal('Warning');

    // The flooded claim: the cached Events go quiet past the grace, the removal is tried, and the
    // server's Events, which the cache left out and which count as activity now, refute it.
    const refutedBefore = await sample('topovol_pv_binder_refuted_by_server_total', { check: 'selected_node' });
    await eventually(async () => expect(await sample('topovol_pv_binder_refuted_by_server_total', { check: 'selected_node' })).to.be.above(refutedBefore), 60_000);
    expect((await getPVC(admin, ns, 'flooded')).metadata?.annotations?.[SEL]).to.equal(`${ns}-vanished`);

    // The flood gone (its Events expire within the hour; here deleted), the claim is no longer stuck.
    for (const e of (await admin.list<Event>(Resources.events, { namespace: ns })).items) await admin.delete(Resources.events, e.metadata.name!, ns).catch(() => undefined);
    await eventually(() => expect(ours()).to.deep.equal([]), 30_000);
    await eventually(async () => expect((await getPVC(admin, ns, 'flooded')).metadata?.annotations?.[SEL]).to.equal(undefined), 60_000);
  });
});
