import { expect } from 'chai';
import { projectClaim, projectPod, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { eventually, metricSum } from '@topovol/testing';
import type { FaultProxy, InProcessLoop } from '@topovol/testing';
import { binderBehindProxySuite, deleteNow, getPV, getPVC, pv, pvc } from './binder-harness.js';

const PODS = '/api/v1/pods';
const REFUTED = 'topovol_pv_binder_refuted_by_server_total';
const HOLD = 'example.com/hold';

// A free volume goes to a claim being deleted only for a pod already on a node using it (upstream
// binds it regardless: docs/divergences.md, "deletion: a Pending claim held while being deleted").
// The pod is read on the server before the volume is written: here the proxy holds the binder's pod
// watch while the pod is deleted, so its cache still shows the pod; without the read the static
// Delete volume would be bound to the claim, then Released once the claim goes.
describe('pv-binder: a free volume is not bound to a claim being deleted for a pod the cache has not seen go', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let proxy: FaultProxy;
  let binder: InProcessLoop;
  let ns: string;

  binderBehindProxySuite(17, 'lagpod-', (t) => ({ admin, proxy, binder, ns } = t));
  after(async function () {
    for (const v of ['gone', 'there']) await deleteNow(admin, Resources.persistentVolumes, `${ns}-${v}`).catch(() => undefined);
  });

  const freeVolume = (name: string, cls: string): PersistentVolume => pv(name, '1Gi', { class: cls, policy: 'Delete' });

  /** Claim `name` held by a finalizer and being deleted, and pod `name` placed on a node using it, both in the binder's caches. */
  async function deletingClaimWithPlacedPod(name: string, cls: string): Promise<void> {
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...pvc(ns, name, '1Gi', { class: cls }), metadata: { name, namespace: ns, finalizers: [HOLD] } });
    const placed = await admin.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec: { nodeName: `${ns}-node`, containers: [{ name: 'c', image: 'example.invalid/app' }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: name } }] } });
    await admin.delete(Resources.persistentVolumeClaims, name, ns);
    const claims = binder!.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }).cache;
    const pods = binder!.informers.forResource<Pod>(Resources.pods, { transform: projectPod }).cache;
    await eventually(() => {
      expect(claims.get(`${ns}/${name}`)?.metadata?.deletionTimestamp).to.be.a('string');
      expect(pods.get(`${ns}/${name}`)?.metadata?.uid).to.equal(placed.metadata?.uid);
    });
  }

  async function staysFree(name: string, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      expect((await getPV(admin, name)).spec?.claimRef, `${name} bound`).to.equal(undefined);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('the pod went (its watch held): refuted on the server, the volume stays free, and free once the claim goes', async function () {
    const cls = `${ns}-gone`;
    await deletingClaimWithPlacedPod('c-gone', cls);
    proxy.holdUntilRelease((r) => r.watch && r.path === PODS);
    await deleteNow(admin, Resources.pods, 'c-gone', ns);
    const before = await metricSum(REFUTED, { check: 'deleting_claim' });
    await admin.create(Resources.persistentVolumes, freeVolume(`${ns}-gone`, cls));
    await eventually(async () => expect(await metricSum(REFUTED, { check: 'deleting_claim' })).to.be.above(before), 30_000);
    await staysFree(`${ns}-gone`, 2_000);
    proxy.release();
    await staysFree(`${ns}-gone`, 2_000);
    await admin.patch(Resources.persistentVolumeClaims, 'c-gone', ns, 'merge', { metadata: { finalizers: null } });
    await eventually(async () => expect(await admin.get(Resources.persistentVolumeClaims, 'c-gone', ns).catch(() => undefined)).to.equal(undefined));
    await staysFree(`${ns}-gone`, 2_000);
    expect((await getPV(admin, `${ns}-gone`)).status?.phase).to.equal('Available');
  });

  it('the pod is still on its node on the server: the volume is bound to the claim, as upstream', async function () {
    const cls = `${ns}-there`;
    await deletingClaimWithPlacedPod('c-there', cls);
    await admin.create(Resources.persistentVolumes, freeVolume(`${ns}-there`, cls));
    await eventually(async () => {
      expect((await getPVC(admin, ns, 'c-there')).status?.phase).to.equal('Bound');
      expect((await getPV(admin, `${ns}-there`)).spec?.claimRef?.name).to.equal('c-there');
    }, 30_000);
    await admin.patch(Resources.persistentVolumeClaims, 'c-there', ns, 'merge', { metadata: { finalizers: null } });
  });
});
