import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { deleteNow, getPV, pv, pvc, RunningBinder } from './binder-harness.js';

const HOLD = 'example.com/hold';

/**
 * A claim Bound to a volume whose claimRef was removed, its own bind-completed removed too (by hand,
 * a restore tool), being deleted behind a finalizer with no pod: it gets its volume back, so that
 * once it goes the volume is Released and kept (Retain), as upstream leaves a volume whose claim
 * went. Checked against the claim's pods on the server as a free volume for a claim being deleted
 * is (deleting-claim.ts), the binding was refused on every retry, and once the claim went the
 * volume, held no longer, was made Available: free for any claim, with the first claim's data.
 */
describe('pv-binder: a Bound claim being deleted gets back the volume that lost its claimRef (real API server)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let binder: RunningBinder | undefined;
  let ns: string;
  const volumeName = (): string => `${ns}-v`;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    ns = await createTestNamespace(admin, 'hold-deleting-');
  });
  after(async function () {
    await binder?.stop();
    await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { metadata: { finalizers: null } }).catch(() => undefined);
    await deleteNow(admin, Resources.persistentVolumes, volumeName()).catch(() => undefined);
    await admin.delete(Resources.storageClasses, ns).catch(() => undefined);
  });

  it('bound again while it is being deleted, Released (not Available) once it is gone', async function () {
    // The state is made before the binder starts, so that no binding of its own comes between the steps.
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: ns }, provisioner: 'kubernetes.io/no-provisioner' });
    await admin.create(Resources.persistentVolumes, pv(volumeName(), '1Gi', { class: ns, policy: 'Retain' }));
    await admin.patch(Resources.persistentVolumes, volumeName(), undefined, 'merge', { status: { phase: 'Bound' } }, { subresource: 'status' });
    const claim = pvc(ns, 'c', '1Gi', { class: ns, volumeName: volumeName() });
    const made = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...claim, metadata: { ...claim.metadata, finalizers: [HOLD] } });
    await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { status: { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } }, { subresource: 'status' });
    await admin.delete(Resources.persistentVolumeClaims, 'c', ns);

    binder = await RunningBinder.start();
    await eventually(async () => {
      const v = await getPV(admin, volumeName());
      expect([v.spec?.claimRef?.name, v.spec?.claimRef?.uid, v.status?.phase], 'the volume bound to its claim again').to.deep.equal(['c', made.metadata?.uid, 'Bound']);
    });

    await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { metadata: { finalizers: null } });
    await eventually(async () => expect((await getPV(admin, volumeName())).status?.phase, 'released to its Retain policy').to.equal('Released'));
    const v = await getPV(admin, volumeName());
    expect(v.spec?.claimRef?.uid, 'its claimRef still names the gone claim').to.equal(made.metadata?.uid);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
  });
});
