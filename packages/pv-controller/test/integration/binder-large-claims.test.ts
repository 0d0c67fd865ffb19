import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { deleteNow, getPVC, pv, pvc, RunningBinder } from './binder-harness.js';

/** About 500 KB of labels: bounded only by the object's size, as kube-apiserver validates them. */
function manyLabels(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`tenant.example.com/l-${String(i).padStart(5, '0')}`, 'v'.repeat(63)]));
}

// A tenant decides how large its claims are. The binder caches a projection of each claim
// (projectClaim) and writes claims by merge patch, so a large claim costs it little memory and
// everything it does not read (labels, annotations, finalizers, status conditions) stays as the
// claim's writers left it. The binder runs as its own ServiceAccount with the generated role.
describe('pv-binder and a large claim: bound, nothing of it lost, a small cached copy (real API server)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start();
    ns = await createTestNamespace(admin, 'binder-large-');
  });
  after(async function () {
    await binder?.stop();
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-v`).catch(() => undefined);
  });

  it('binds a claim with 5,000 labels, 200 KiB of annotations, a finalizer and status conditions, and keeps all of them', async function () {
    const labels = manyLabels(5_000);
    const note = 'n'.repeat(200 * 1024);
    // Named volume not there yet: the claim waits Pending while its status gets a condition (as a
    // resizer writes them), which the binder's status write must keep.
    const base = pvc(ns, 'big', '1Gi', { volumeName: `${ns}-v` });
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
      ...base,
      metadata: { ...base.metadata, labels, annotations: { 'tenant.example.com/note': note }, finalizers: ['tenant.example.com/hold'] },
    });
    const condition = { type: 'ModifyingVolume', status: 'True', reason: 'Test', message: 'set before binding' };
    await eventually(async () => {
      const c = await getPVC(admin, ns, 'big');
      await admin.replaceStatus(Resources.persistentVolumeClaims, { ...c, status: { ...c.status, conditions: [condition] } });
    });
    const claims = binder.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
    await eventually(() => expect(claims.cache.get(`${ns}/big`)?.status?.phase).to.equal('Pending'));

    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi'));
    const bound = await eventually(async () => {
      const c = await getPVC(admin, ns, 'big');
      expect([c.status?.phase, c.spec?.volumeName]).to.deep.equal(['Bound', `${ns}-v`]);
      return c;
    }, 30_000);
    expect(bound.metadata?.labels, 'labels').to.deep.equal(labels);
    expect(bound.metadata?.annotations?.['tenant.example.com/note'], 'annotation').to.equal(note);
    expect(bound.metadata?.annotations).to.include({ 'pv.kubernetes.io/bind-completed': 'yes' });
    expect(bound.metadata?.finalizers, 'finalizers').to.include('tenant.example.com/hold');
    expect(bound.status?.conditions?.map((c) => c.type), 'status conditions').to.deep.equal(['ModifyingVolume']);
    expect(bound.status?.capacity?.storage).to.equal('1Gi');

    // The copy the binder holds: identity, binding and status, not the tenant's labels.
    const cached = await eventually(() => {
      const c = claims.cache.get(`${ns}/big`);
      expect(c?.status?.phase).to.equal('Bound');
      return c!;
    });
    const wholeSize = JSON.stringify(bound).length;
    const cachedSize = JSON.stringify(cached).length;
    expect(wholeSize, 'the claim as served').to.be.above(500_000);
    expect(cachedSize, 'the cached copy').to.be.below(2_000);

    // A status write decided on the cached copy alone: the phase set back by hand is Bound again
    // (upstream's syncBoundClaim does the same), and the condition the cache does not hold stays.
    await admin.patch(Resources.persistentVolumeClaims, 'big', ns, 'merge', { status: { phase: 'Pending' } }, { subresource: 'status' });
    const again = await eventually(async () => {
      const c = await getPVC(admin, ns, 'big');
      expect(c.status?.phase).to.equal('Bound');
      return c;
    }, 30_000);
    expect(again.status?.conditions?.map((c) => c.type), 'status conditions after a write from the cache').to.deep.equal(['ModifyingVolume']);
    expect(Object.keys(again.metadata?.labels ?? {}).length, 'labels after a write from the cache').to.equal(5_000);

    await admin.patch(Resources.persistentVolumeClaims, 'big', ns, 'merge', { metadata: { finalizers: null } });
  });
});
