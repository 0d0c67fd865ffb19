import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { eventually, metricSum } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxySuite, deleteNow, getPV, pv, pvc } from './binder-harness.js';

const CLAIMS = '/api/v1/persistentvolumeclaims';
const BINDS = 'topovol_pv_binder_binds_total';
const HOLD = 'example.com/hold';

/** The volume stays free, and never Released, for `ms`. */
async function staysFree(admin: KubeClient, name: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const v = await getPV(admin, name);
    expect(v.status?.phase, `${name} Released`).to.not.equal('Released');
    await new Promise((r) => setTimeout(r, 200));
  }
  const v = await getPV(admin, name);
  expect(v.spec?.claimRef, `${name} still names a claim`).to.equal(undefined);
  expect(v.status?.phase).to.equal('Available');
}

// A binding writes the volume, then the claim, decided on the claim cache. When that cache is
// behind the claim's delete, the volume gets a claimRef for a claim the server no longer has (or is
// deleting); upstream keeps it, then Releases the volume and, with Delete, its deleter deletes a
// static volume no claim ever used. Here the proxy holds the binder's claim watch while the claim is
// deleted and a free volume for it appears: the claim's write fails, and the binder takes the volume
// back (orphaned-bind.ts), so once the watch catches up the volume is free, never Released.
describe('pv-binder: a volume bound for a claim the cache has not seen go is taken back, never Released', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop;
  let ns: string;

  binderBehindProxySuite(13, 'lagclaim-', (t) => ({ admin, proxy, binder, ns } = t));
  after(async function () {
    for (const v of ['gone', 'deleting', 'again']) await deleteNow(admin, Resources.persistentVolumes, `${ns}-${v}`).catch(() => undefined);
  });

  /** A Pending claim the binder has cached, then its claim watch held. */
  async function cachedThenHeld(name: string, cls: string): Promise<PersistentVolumeClaim> {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...pvc(ns, name, '1Gi', { class: cls }), metadata: { name, namespace: ns, finalizers: [HOLD] } });
    await eventually(() => expect(binder!.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }).cache.get(`${ns}/${name}`)?.metadata?.uid).to.equal(claim.metadata?.uid));
    proxy.holdUntilRelease((r) => r.watch && r.path === CLAIMS);
    return claim;
  }

  const freeVolume = (name: string, cls: string): PersistentVolume => pv(name, '1Gi', { class: cls, policy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/static' } });

  it('the claim is gone: the volume is taken back at once, and stays free once the watch catches up', async function () {
    const cls = `${ns}-gone`;
    await cachedThenHeld('c-gone', cls);
    await admin.patch(Resources.persistentVolumeClaims, 'c-gone', ns, 'merge', { metadata: { finalizers: null } });
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c-gone', ns);
    const before = await metricSum(BINDS, { result: 'taken_back' });
    await admin.create(Resources.persistentVolumes, freeVolume(`${ns}-gone`, cls));
    await eventually(async () => expect(await metricSum(BINDS, { result: 'taken_back' })).to.be.above(before), 30_000);
    proxy.release();
    await eventually(async () => expect((await getPV(admin, `${ns}-gone`)).spec?.claimRef).to.equal(undefined), 30_000);
    await staysFree(admin, `${ns}-gone`, 3_000);
  });

  it('the claim is being deleted (a finalizer holds it, no pod uses it): taken back, and the claim waits without it as before', async function () {
    const cls = `${ns}-deleting`;
    await cachedThenHeld('c-deleting', cls);
    await admin.delete(Resources.persistentVolumeClaims, 'c-deleting', ns);
    const before = await metricSum(BINDS, { result: 'taken_back' });
    await admin.create(Resources.persistentVolumes, freeVolume(`${ns}-deleting`, cls));
    await eventually(async () => expect(await metricSum(BINDS, { result: 'taken_back' })).to.be.above(before), 30_000);
    proxy.release();
    await staysFree(admin, `${ns}-deleting`, 3_000);
    await admin.patch(Resources.persistentVolumeClaims, 'c-deleting', ns, 'merge', { metadata: { finalizers: null } });
    await eventually(async () => expect(await admin.get(Resources.persistentVolumeClaims, 'c-deleting', ns).catch(() => undefined)).to.equal(undefined));
    await staysFree(admin, `${ns}-deleting`, 3_000);
  });

  it('the claim was deleted and created again under its name: taken back from the old one, then bound to the new one', async function () {
    const cls = `${ns}-again`;
    await cachedThenHeld('c-again', cls);
    await admin.patch(Resources.persistentVolumeClaims, 'c-again', ns, 'merge', { metadata: { finalizers: null } });
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c-again', ns);
    const again = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c-again', '1Gi', { class: cls }));
    const before = await metricSum(BINDS, { result: 'taken_back' });
    await admin.create(Resources.persistentVolumes, freeVolume(`${ns}-again`, cls));
    await eventually(async () => expect(await metricSum(BINDS, { result: 'taken_back' })).to.be.above(before), 30_000);
    proxy.release();
    await eventually(async () => {
      const v = await getPV(admin, `${ns}-again`);
      expect(v.spec?.claimRef?.uid).to.equal(again.metadata?.uid);
      expect(v.status?.phase).to.equal('Bound');
    }, 30_000);
  });
});
