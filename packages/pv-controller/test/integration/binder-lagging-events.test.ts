import { expect } from 'chai';
import { PROVISIONING_EVENTS, Resources, slimEvent } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, metricSum } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxy, getPVC, provisioningAttempt, pvc } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
// The provisioner below retries every second: the grace leaves a loaded machine some seconds for a
// retry's Event to land before the binder would take the provisioner for quiet.
const GRACE_S = 6;
const EVENTS = '/api/v1/events';

// A selected node is removed only while the external provisioner shows no activity on the claim
// (sig-storage-lib-external-provisioner #121: a CreateVolume under way may already have made the
// volume). The binder sees that activity through its Events watch; here the proxy holds that watch,
// as a watch that lags or a relist in progress would, while the provisioner keeps retrying a claim
// whose selected node is gone. The removal is read against the server's Events first.
describe('pv-binder: a selected node is never removed under a provisioner the Events watch has not shown', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop | undefined;
  let ns: string;
  let cls: string;

  before(async function () {
    ({ admin, proxy, binder } = await binderBehindProxy(11, [`--stale-selected-node-grace=${GRACE_S}s`]));
  });
  after(async function () {
    proxy?.release();
    await binder?.stop();
    await proxy?.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'lagev-');
    cls = `${ns}-late`;
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/csi', volumeBindingMode: 'WaitForFirstConsumer' });
  });
  afterEach(async function () {
    proxy.release();
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
  });

  const selectedNode = async (claim: string): Promise<string | undefined> => (await getPVC(admin, ns, claim)).metadata?.annotations?.[SEL];

  /**
   * Claims "retried" and "idle" with a selected node that is gone; a provisioner retries "retried"
   * every second (timestamps `clockOffsetMs` off ours), as after a CreateVolume that timed out.
   * "idle", which nobody provisions, proves the binder decides removals meanwhile. The annotation of
   * "retried" is checked throughout four graces of retries; then the provisioner stops.
   */
  async function keptWhileRetried(clockOffsetMs = 0): Promise<PersistentVolumeClaim> {
    const gone = `${ns}-gone-node`;
    const retried = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'retried', '1Gi', { class: cls, annotations: { [SEL]: gone } }));
    // The first attempt right after the claim, so that the grace the binder counts from its first
    // look at the claim does not also hold the other claim's create.
    let attempt: Event = await provisioningAttempt(admin, retried, undefined, clockOffsetMs);
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'idle', '1Gi', { class: cls, annotations: { [SEL]: gone } }));
    let retrying = true;
    const retries = (async () => {
      while (retrying) {
        await new Promise((r) => setTimeout(r, 1000));
        if (retrying) attempt = await provisioningAttempt(admin, retried, attempt, clockOffsetMs);
      }
    })();
    try {
      const started = Date.now();
      await eventually(async () => expect(await selectedNode('idle')).to.equal(undefined), 60_000);
      while (Date.now() - started < 4 * GRACE_S * 1000) {
        expect(await selectedNode('retried'), 'removed under a provisioner at work').to.equal(gone);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      retrying = false;
      await retries;
    }
    return retried;
  }

  it('keeps it while the server has fresh Provisioning Events the cache never saw; removes it once the provisioner is quiet for the grace', async function () {
    // The Events watch stops delivering from here on (lists still answer).
    proxy.holdUntilRelease((r) => r.watch && r.path === EVENTS);
    const refutedBefore = await metricSum('topovol_pv_binder_refuted_by_server_total', { check: 'selected_node' });
    const retried = await keptWhileRetried();
    const cached = binder!.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_EVENTS, transform: slimEvent });
    expect(cached.cache.list().filter((e) => e.involvedObject?.uid === retried.metadata?.uid), 'the cache saw the attempts (the hold did not hold)').to.deep.equal([]);
    // The binder did plan the removal on its cache, and the server's Events stopped it (counted).
    expect(await metricSum('topovol_pv_binder_refuted_by_server_total', { check: 'selected_node' })).to.be.above(refutedBefore);
    // While the watch lags, a version of the Event it never delivered counts as activity now: the
    // removal waits for the cache. Once the watch catches up and the provisioner has gone quiet,
    // with the node gone, it is let go after the grace, as the provisioner itself would when it
    // finds the node missing.
    proxy.release();
    await eventually(async () => expect(await selectedNode('retried')).to.equal(undefined), 60_000);
  });

  it('keeps it while a provisioner whose clock runs an hour behind retries (its Events look an hour old); removes it once it is quiet', async function () {
    await keptWhileRetried(-3_600_000);
    await eventually(async () => expect(await selectedNode('retried')).to.equal(undefined), 60_000);
  });
});
