import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, eventually, metricSum } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxy, deleteNow, getPV, getPVC, pv, pvc } from './binder-harness.js';

const VOLUMES = '/api/v1/persistentvolumes';
const REFUTED = 'topovol_pv_binder_refuted_by_server_total';

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
  let binder: InProcessLoop | undefined;
  let ns: string;

  before(async function () {
    ({ admin, proxy, binder } = await binderBehindProxy(12));
    ns = await createTestNamespace(admin, 'lagvol-');
  });
  after(async function () {
    proxy?.release();
    await binder?.stop();
    await proxy?.stop();
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
