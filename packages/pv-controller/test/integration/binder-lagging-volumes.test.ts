import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { eventually, metricSum } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxySuite, deleteNow, getPV, getPVC, pv, pvc } from './binder-harness.js';

const VOLUMES = '/api/v1/persistentvolumes';
const REFUTED = 'topovol_pv_binder_refuted_by_server_total';
const SEL = 'volume.kubernetes.io/selected-node';

// A claim whose binding completed is Lost when its volume is gone (upstream's syncBoundClaim). The
// binder's volume cache can miss a volume the server has: its watch behind the claims' (two
// streams), or a relist under way. Lost is undone once the volume shows, but meanwhile the claim's
// status loses its capacity and access modes, no new pod may use it, and a Warning says its data
// is lost. Here the proxy holds the volumes' watch while a claim is bound, by its writer, to a
// volume created meanwhile (as a restore or a migration tool writes both); the binder confirms
// Lost against the server's volume first (verify-on-server.ts).
describe('pv-binder: a claim is never marked Lost for a volume its cache has not shown yet', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop;
  let ns: string;

  binderBehindProxySuite(12, 'lagvol-', (t) => ({ admin, proxy, binder, ns } = t));
  after(async function () {
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns).catch(() => undefined);
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-v`).catch(() => undefined);
  });

  it('keeps the claim as it is while the server has its volume, and binds both once the watch catches up', async function () {
    const cls = `${ns}-manual`;
    // Pending, nothing to bind to: the binder has seen it and left it alone.
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls }));
    const claims = binder!.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
    await eventually(() => expect(claims.cache.get(`${ns}/c`)?.metadata?.uid).to.equal(claim.metadata?.uid));
    proxy.holdUntilRelease((r) => r.watch && r.path === VOLUMES);
    const refutedBefore = await metricSum(REFUTED, { check: 'lost' });
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi', { class: cls, claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: claim.metadata?.uid } }));
    // Its writer binds the claim: the binder, whose cache has no such volume, would declare it Lost.
    await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { metadata: { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }, spec: { volumeName: `${ns}-v` } });
    await eventually(async () => {
      expect((await getPVC(admin, ns, 'c')).status?.phase, 'marked Lost while the server has its volume').to.equal('Pending');
      expect(await metricSum(REFUTED, { check: 'lost' }), 'Lost planned on the cache and refuted by the server').to.be.above(refutedBefore);
    }, 30_000);
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      expect((await getPVC(admin, ns, 'c')).status?.phase, 'marked Lost while the server has its volume').to.equal('Pending');
      await new Promise((r) => setTimeout(r, 200));
    }
    proxy.release();
    await eventually(async () => {
      expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Bound');
      expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Bound');
    }, 30_000);
    const warnings = (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: 'involvedObject.name=c,type=Warning' })).items.map((e) => e.reason);
    expect(warnings, 'a Warning that the data is lost').to.not.include('ClaimLost');
    expect(warnings, 'a Warning that the claim is misbound').to.not.include('ClaimMisbound');
  });
});

// Removing a stale selected node rests on no volume having been made for the claim: the provisioner
// creates the volume pre-bound to the claim, and the claim would then be provisioned afresh elsewhere
// while that volume is left behind. The volume cache can miss it. Before the removal the binder reads,
// by name, each name --provisioned-volume-names gives a claim's volume (verify-on-server.ts); here a
// provisioner run with --volume-name-prefix=csi-vol --volume-name-uuid-length=8 made it while the
// proxy holds the volumes' watch.
describe('pv-binder: a stale selected node is never removed while the server has a volume made for the claim under a custom name', function () {
  this.timeout(120_000);
  const GRACE_S = 3;
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop;
  let ns: string;
  let made = '';

  binderBehindProxySuite(13, 'lagname-', (t) => ({ admin, proxy, binder, ns } = t), [`--stale-selected-node-grace=${GRACE_S}s`, '--provisioned-volume-names=pvc,csi-vol:8']);
  after(async function () {
    for (const c of ['made', 'idle']) await deleteNow(admin, Resources.persistentVolumeClaims, c, ns).catch(() => undefined);
    if (made) await deleteNow(admin, Resources.persistentVolumes, made).catch(() => undefined);
    await admin.delete(Resources.storageClasses, `${ns}-late`).catch(() => undefined);
  });

  it('keeps the annotation while the watch lags, and binds the claim to that volume once it catches up', async function () {
    const gone = `${ns}-gone-node`;
    const cls = `${ns}-late`;
    const annotations = { [SEL]: gone };
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/csi', volumeBindingMode: 'WaitForFirstConsumer' });
    proxy.holdUntilRelease((r) => r.watch && r.path === VOLUMES);
    const refutedBefore = await metricSum(REFUTED, { check: 'selected_node' });
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'made', '1Gi', { class: cls, annotations }));
    made = `csi-vol-${claim.metadata!.uid!.replace(/-/g, '').slice(0, 8)}`;
    const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'made', uid: claim.metadata!.uid! };
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(made, '1Gi', { class: cls, claimRef, policy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/csi' } }));
    // Nobody provisions this one: its removal shows the binder decides removals meanwhile.
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'idle', '1Gi', { class: cls, annotations }));
    await eventually(async () => expect((await getPVC(admin, ns, 'idle')).metadata?.annotations?.[SEL]).to.equal(undefined), 60_000);
    const until = Date.now() + 3 * GRACE_S * 1000;
    while (Date.now() < until) {
      expect((await getPVC(admin, ns, 'made')).metadata?.annotations?.[SEL], 'removed with a volume made for the claim on the server').to.equal(gone);
      await new Promise((r) => setTimeout(r, 200));
    }
    const volumes = binder!.informers.forResource<PersistentVolume>(Resources.persistentVolumes);
    expect(volumes.cache.get(made), 'the cache saw the volume (the hold did not hold)').to.equal(undefined);
    expect(await metricSum(REFUTED, { check: 'selected_node' }), 'the removal planned on the cache and refuted by the server').to.be.above(refutedBefore);
    proxy.release();
    await eventually(async () => {
      const c = await getPVC(admin, ns, 'made');
      expect(c.spec?.volumeName).to.equal(made);
      expect(c.status?.phase).to.equal('Bound');
      expect(c.metadata?.annotations?.[SEL]).to.equal(gone);
    }, 30_000);
  });
});
