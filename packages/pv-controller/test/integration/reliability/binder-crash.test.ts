import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { AuditLogTail, controllerUser, createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import type { AuditEvent, ManagedProcess } from '@topovol/testing';
import { deleteNow, getPV, getPVC, GiB, pv, pvc } from '../binder-harness.js';
import { startBinderManager } from './chaos-harness.js';

/** The binder's writes of one binding, in order, after each of which the process can die (packages/shared/src/testing-hooks/failpoint.ts); the fourth, the claim's status, ends it. */
const FAILPOINTS = ['binder-volume-claimref', 'binder-volume-bound', 'binder-claim-volumename'] as const;

/** Successful spec writes (not status) of volumes by the pv-binder's ServiceAccount, from the API server's audit log. */
function volumeSpecWrites(audit: AuditLogTail, names: readonly string[]): AuditEvent[] {
  return audit
    .events()
    .filter((e) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('pv-binder') && e.verb === 'update' && e.objectRef?.resource === 'persistentvolumes' && !e.objectRef.subresource && names.includes(e.objectRef.name ?? '') && (e.responseStatus?.code ?? 0) < 300);
}

/**
 * The real manager binary killed right after each write of a binding (kube-controller-manager's
 * bind() makes the same four: the volume's claimRef, its phase, the claim's volumeName and
 * annotations, its phase), then started again with empty caches: the claim ends bound to the volume
 * the first process chose, the other equal volume is never touched, and nothing is released.
 */
describe('pv-binder crash safety: killed after each write of a binding, the restarted binder finishes the same binding', function () {
  this.timeout(180_000);

  for (const fp of FAILPOINTS) {
    it(`killed at ${fp}`, async function () {
      const cp = await sharedControlPlane();
      const admin = cp.adminClient();
      const ns = await createTestNamespace(admin, 'bcrash-');
      const cls = `${ns}-static`;
      const volumes = [`${ns}-v1`, `${ns}-v2`];
      const audit = new AuditLogTail(cp.auditLogPath);
      await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate' });
      const first = await startBinderManager(`${ns}-first`, { leaderElect: false, env: { ...process.env, TOPOVOL_FAILPOINTS: fp } });
      let second: ManagedProcess | undefined;
      try {
        // Two equal volumes: a restarted binder that forgot the first one's choice could take the other.
        for (const v of volumes) await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(v, GiB(1), { class: cls, policy: 'Delete' }));
        await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: cls }));
        expect(await first.waitForExit(), 'killed by its failpoint').to.equal(-1);
        const died = readFileSync(first.logFile, 'utf8').split('\n').find((l) => l.startsWith(`failpoint ${fp}`));
        const chosen = volumes.find((v) => died?.includes(`(${v})`));
        expect(chosen, `the failpoint fired for one of this test's volumes: ${died}`).to.be.a('string');

        second = await startBinderManager(`${ns}-second`, { leaderElect: false });
        const claim = await eventually(async () => {
          const c = await getPVC(admin, ns, 'c');
          expect([c.status?.phase, c.spec?.volumeName]).to.deep.equal(['Bound', chosen]);
          return c;
        }, 60_000);
        const bound = await getPV(admin, chosen!);
        expect([bound.status?.phase, bound.spec?.claimRef?.uid]).to.deep.equal(['Bound', claim.metadata?.uid]);
        // The other volume is made Available by whichever process got to it (the second may do so
        // after binding the claim).
        await eventually(async () => {
          const other = await getPV(admin, volumes.find((v) => v !== chosen)!);
          expect([other.status?.phase, other.spec?.claimRef]).to.deep.equal(['Available', undefined]);
        });
        // One claimRef write, to the chosen volume, whichever process made it; the other never written.
        await eventually(() => expect(volumeSpecWrites(audit, volumes).map((e) => e.objectRef?.name)).to.deep.equal([chosen]));
      } finally {
        await first.stop();
        await second?.stop();
        await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns).catch(() => undefined);
        for (const v of volumes) await deleteNow(admin, Resources.persistentVolumes, v).catch(() => undefined);
        await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
      }
    });
  }
});
