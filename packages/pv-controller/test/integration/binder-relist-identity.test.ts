import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxySuite, deleteNow, getPV, getPVC, pv, pvc } from './binder-harness.js';

const CLAIMS = '/api/v1/persistentvolumeclaims';
const VOLUMES = '/api/v1/persistentvolumes';

// An object deleted and made again under its name while the binder's watch was down reaches it as
// an update when it lists again (a watch that expired, a kube-apiserver restart): the same key,
// another uid. The object it was bound to must hear of it then; upstream's handlers do not look,
// and its re-sync (never off there) repairs it within a period. Here the re-sync is off
// (--pvclaimbinder-sync-period=0), so only the event can.
describe('pv-binder: a claim or volume made again under its name while the watch was down', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop;
  let ns: string;

  binderBehindProxySuite(21, 'relistid-', (t) => ({ admin, proxy, binder, ns } = t), ['--pvclaimbinder-sync-period=0']);

  /** Claim c bound by the binder to volume v, of a class of their own. */
  const boundPair = async (c: string, v: string): Promise<{ claim: PersistentVolumeClaim; cls: string }> => {
    const cls = `${ns}-${c}`;
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(v, '1Gi', { class: cls }));
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, c, '1Gi', { class: cls }));
    await eventually(async () => expect((await getPVC(admin, ns, c)).status?.phase).to.equal('Bound'));
    return { claim, cls };
  };

  it('a claim deleted and made again: its old volume is Released when the claims are listed again', async function () {
    const { claim } = await boundPair('c', `${ns}-v`);
    proxy.holdUntilRelease((r) => r.watch && r.path === CLAIMS);
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns);
    // The new claim asks for a class nothing serves: it stays Pending, and never takes the volume.
    const again = await eventually(() => admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: `${ns}-none` })));
    expect(again.metadata?.uid).to.not.equal(claim.metadata?.uid);
    binder!.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }).relist();
    await eventually(async () => expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Released'), 30_000);
    expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Pending');
  });

  it('a volume deleted and made again without a claimRef: its claim binds it again when the volumes are listed again', async function () {
    const { claim, cls } = await boundPair('d', `${ns}-w`);
    proxy.holdUntilRelease((r) => r.watch && r.path === VOLUMES);
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-w`);
    await eventually(() => admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-w`, '1Gi', { class: cls })));
    binder!.informers.forResource<PersistentVolume>(Resources.persistentVolumes).relist();
    // A bound claim whose volume has no claimRef binds it again (upstream's syncBoundClaim).
    await eventually(async () => expect((await getPV(admin, `${ns}-w`)).spec?.claimRef?.uid).to.equal(claim.metadata?.uid), 30_000);
  });
});
