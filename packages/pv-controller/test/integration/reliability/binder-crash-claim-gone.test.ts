import { expect } from 'chai';
import { ANN_BOUND_BY_CONTROLLER, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { AuditLogTail, controllerUser, createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import type { AuditEvent, ManagedProcess } from '@topovol/testing';
import { deleteNow, getPV, getPVC, GiB, pv, pvc, unreferenceByHand } from '../binder-harness.js';
import { startBinderManager } from './chaos-harness.js';

const HOLD = 'example.com/hold';

/** Successful writes of the volume (spec or status) by the pv-binder's ServiceAccount, in order. */
function volumeWrites(audit: AuditLogTail, name: string): string[] {
  return audit
    .events()
    .filter((e) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('pv-binder') && e.verb === 'update' && e.objectRef?.resource === 'persistentvolumes' && e.objectRef.name === name && (e.responseStatus?.code ?? 0) < 300)
    .map((e) => e.objectRef?.subresource ?? 'spec');
}

/** Successful writes of the volume's status by the pv-binder's ServiceAccount (a release, its reclaim), from the API server's audit log. */
function statusWrites(audit: AuditLogTail, name: string): AuditEvent[] {
  return audit
    .events()
    .filter((e) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('pv-binder') && e.objectRef?.resource === 'persistentvolumes' && e.objectRef.subresource === 'status' && e.objectRef.name === name && (e.responseStatus?.code ?? 0) < 300);
}

/** Available again, its claimRef reserving it for a claim of the same namespace and name, without the uid of the one that went. */
async function expectTakenBack(admin: KubeClient, name: string, ns: string): Promise<void> {
  await eventually(async () => {
    const v = await getPV(admin, name);
    const ref = v.spec?.claimRef;
    expect([v.status?.phase, ref?.namespace, ref?.name, ref?.uid]).to.deep.equal(['Available', ns, 'c', undefined]);
  }, 60_000);
}

/**
 * A binding from the free pool that never reached its claim, whose claim then went: the process
 * killed between the volume's claimRef and anything else (the real manager binary, its failpoint),
 * or kube-scheduler's pre-binding (BindPodVolumes writes only the volume). The claim is deleted
 * before the binder looks again. kube-controller-manager Releases the volume and, with `Delete`,
 * hands a static volume no claim ever used to its deleter; Topovol makes it Available again
 * (docs/divergences.md, "A binding whose claim went while it was written").
 */
describe('pv-binder: an unfinished binding whose claim went is taken back, never Released', function () {
  this.timeout(180_000);
  let admin: KubeClient;
  let ns: string;
  let cls: string;
  let audit: AuditLogTail;
  const procs: ManagedProcess[] = [];
  const extraVolumes: string[] = [];

  beforeEach(async function () {
    const cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'bgone-');
    cls = `${ns}-static`;
    audit = new AuditLogTail(cp.auditLogPath);
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate' });
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, GiB(1), { class: cls, policy: 'Delete' }));
  });

  afterEach(async function () {
    for (const p of procs.splice(0)) await p.stop();
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns, { quiet: true });
    await deleteNow(admin, Resources.persistentVolumeClaims, 'barrier', ns, { quiet: true });
    for (const v of ['v', 'barrier']) await deleteNow(admin, Resources.persistentVolumes, `${ns}-${v}`, undefined, { quiet: true });
    for (const v of extraVolumes.splice(0)) await deleteNow(admin, Resources.persistentVolumes, v, undefined, { quiet: true });
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
  });

  /** The binder killed right after writing the claimRef for claim c; its status writes of the volume until then (Available). */
  async function killedAfterClaimRef(finalizers?: string[], volumeName?: string): Promise<number> {
    const first = await startBinderManager(`${ns}-first`, { leaderElect: false, env: { ...process.env, TOPOVOL_FAILPOINTS: 'binder-volume-claimref' } });
    procs.push(first);
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...pvc(ns, 'c', GiB(1), { class: cls, volumeName }), metadata: { name: 'c', namespace: ns, finalizers } });
    expect(await first.waitForExit(), 'killed by its failpoint').to.equal(-1);
    const left = await getPV(admin, `${ns}-v`);
    expect([left.spec?.claimRef?.uid, left.status?.phase, left.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER]], 'the claimRef written, the phase not').to.deep.equal([claim.metadata?.uid, 'Available', 'yes']);
    return statusWrites(audit, `${ns}-v`).length;
  }

  it('killed after the claimRef, the claim deleted while it was down: the restarted binder makes the volume Available', async function () {
    const before = await killedAfterClaimRef();
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns);
    await eventually(async () => expect(await getPVC(admin, ns, 'c').catch(() => undefined)).to.equal(undefined));
    procs.push(await startBinderManager(`${ns}-second`, { leaderElect: false }));
    await expectTakenBack(admin, `${ns}-v`, ns);
    expect(statusWrites(audit, `${ns}-v`).length, 'never Released (nor Failed by its reclaim)').to.equal(before);
    // Free again: a new claim binds it.
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: cls }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).spec?.volumeName).to.equal(`${ns}-v`), 60_000);
  });

  /**
   * Claim c (held by HOLD) deleted while the binder was down, a binder started again and caught up
   * (a pair created after its start, bound: it has been through what it found). Returns c as it is
   * then, and `letGo`: HOLD removed, c gone, its volume taken back.
   */
  async function deletedWhileDown(): Promise<{ held: PersistentVolumeClaim; letGo: () => Promise<void> }> {
    await admin.delete(Resources.persistentVolumeClaims, 'c', ns);
    procs.push(await startBinderManager(`${ns}-second`, { leaderElect: false }));
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-barrier`, GiB(2), { class: cls }));
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'barrier', GiB(2), { class: cls }));
    await eventually(async () => expect((await getPVC(admin, ns, 'barrier')).status?.phase).to.equal('Bound'), 60_000);
    const held = await getPVC(admin, ns, 'c');
    const letGo = async (): Promise<void> => {
      await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { metadata: { finalizers: null } });
      await eventually(async () => expect(await getPVC(admin, ns, 'c').catch(() => undefined)).to.equal(undefined));
      await expectTakenBack(admin, `${ns}-v`, ns);
    };
    return { held, letGo };
  }

  it('killed after the claimRef, the claim being deleted meanwhile (no pod uses it): the binding is not completed, and the volume is taken back once the claim goes', async function () {
    const before = await killedAfterClaimRef([HOLD]);
    const { held, letGo } = await deletedWhileDown();
    expect(held.spec?.volumeName, 'the binding of a claim being deleted is not completed').to.equal(undefined);
    await letGo();
    expect(statusWrites(audit, `${ns}-v`).length, 'never Released (nor Bound: the binding was not completed)').to.equal(before);
  });

  // The same with a claim that names the volume (a user's spec.volumeName): kube-controller-manager
  // completes the binding (syncUnboundClaim's volumeName branch) and Releases the volume once the
  // claim goes, though no claim was ever Bound to it.
  it('a claim naming the volume, killed after the claimRef, the claim being deleted meanwhile (no pod uses it): not completed, taken back once it goes', async function () {
    const before = await killedAfterClaimRef([HOLD], `${ns}-v`);
    const { held, letGo } = await deletedWhileDown();
    expect([held.status?.phase, held.metadata?.annotations?.['pv.kubernetes.io/bind-completed']], 'the binding of a claim being deleted is not completed').to.deep.equal(['Pending', undefined]);
    expect((await getPV(admin, `${ns}-v`)).status?.phase, 'nor its volume').to.equal('Available');
    await letGo();
    expect(statusWrites(audit, `${ns}-v`).length, 'never Bound, never Released').to.equal(before);
  });

  it("kube-scheduler's pre-binding for a claim deleted before the binder saw it: taken back", async function () {
    procs.push(await startBinderManager(`${ns}-only`, { leaderElect: false }));
    await eventually(async () => expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Available'));
    // kube-apiserver writes a request's ResponseComplete line after its answer, so the GET above may
    // see the phase before the audit log has the write: counted after it, the count is the baseline.
    await eventually(() => expect(statusWrites(audit, `${ns}-v`).length).to.be.greaterThan(0));
    const before = statusWrites(audit, `${ns}-v`).length;
    // A claim of another class, so that the binder never binds it itself; gone before the pre-binding lands.
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: `${cls}-none` }));
    await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns);
    const v = await getPV(admin, `${ns}-v`);
    // What BindPodVolumes writes (GetBindVolumeToClaim in k8s.io/component-helpers/storage/volume): the claimRef and the mark, not the phase.
    const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: claim.metadata?.uid, resourceVersion: claim.metadata?.resourceVersion };
    await admin.replace<PersistentVolume>(Resources.persistentVolumes, { ...v, metadata: { ...v.metadata, annotations: { ...v.metadata?.annotations, [ANN_BOUND_BY_CONTROLLER]: 'yes' } }, spec: { ...v.spec, claimRef } });
    await expectTakenBack(admin, `${ns}-v`, ns);
    expect(statusWrites(audit, `${ns}-v`).length, 'never Released').to.equal(before);
  });

  /**
   * Claim c bound by a binder then stopped; someone removes the volume's claimRef and the volume is
   * made Available (upstream's syncVolume would). Returns the claim.
   */
  async function boundThenUnreferenced(): Promise<PersistentVolumeClaim> {
    const binder = await startBinderManager(`${ns}-first`, { leaderElect: false });
    procs.push(binder);
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: cls }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Bound'), 60_000);
    await binder.stop();
    await unreferenceByHand(admin, `${ns}-v`);
    return claim;
  }

  // The signal above must never be made by a binding that may have been used: a claim that names
  // its volume (here a Bound claim whose volume lost its claimRef) gets the volume's phase Bound
  // before the claimRef, so a stop between the two never leaves an Available volume with a claimRef.
  it('a Bound claim whose volume lost its claimRef and went Available: re-bound phase first', async function () {
    const claim = await boundThenUnreferenced();
    const before = volumeWrites(audit, `${ns}-v`).length;
    procs.push(await startBinderManager(`${ns}-second`, { leaderElect: false }));
    await eventually(async () => {
      const back = await getPV(admin, `${ns}-v`);
      expect([back.status?.phase, back.spec?.claimRef?.uid]).to.deep.equal(['Bound', claim.metadata?.uid]);
    }, 60_000);
    expect(volumeWrites(audit, `${ns}-v`).slice(before), 'the phase, then the claimRef').to.deep.equal(['status', 'spec']);
  });

  // The same re-binding with the process killed between its two volume writes (the phase Bound,
  // no claimRef yet): the restarted binder ends where an uninterrupted one does, the claim's volume
  // Bound to it, and no other claim that fits takes the volume in between.
  it('a Bound claim re-bound phase first, the binder killed after the phase: the restarted binder completes the binding to the same claim', async function () {
    const claim = await boundThenUnreferenced();
    const killed = await startBinderManager(`${ns}-killed`, { leaderElect: false, env: { ...process.env, TOPOVOL_FAILPOINTS: 'binder-volume-phase-first' }, waitUntilReady: false });
    procs.push(killed);
    expect(await killed.waitForExit(), 'killed by its failpoint').to.equal(-1);
    const half = await getPV(admin, `${ns}-v`);
    expect([half.status?.phase, half.spec?.claimRef], 'the phase written, the claimRef not').to.deep.equal(['Bound', undefined]);
    // A claim that fits the volume, waiting when the binder comes back.
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'other', GiB(1), { class: cls }));
    procs.push(await startBinderManager(`${ns}-second`, { leaderElect: false }));
    await eventually(async () => {
      const back = await getPV(admin, `${ns}-v`);
      expect([back.status?.phase, back.spec?.claimRef?.name, back.spec?.claimRef?.uid]).to.deep.equal(['Bound', 'c', claim.metadata?.uid]);
      expect([(await getPVC(admin, ns, 'c')).status?.phase, (await getPVC(admin, ns, 'other')).status?.phase]).to.deep.equal(['Bound', 'Pending']);
    }, 60_000);
    await deleteNow(admin, Resources.persistentVolumeClaims, 'other', ns, { quiet: true });
  });

  it('a new claim naming a free volume binds it as upstream: the claimRef, then the phase', async function () {
    procs.push(await startBinderManager(`${ns}-only`, { leaderElect: false }));
    await eventually(async () => expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Available'));
    await eventually(() => expect(volumeWrites(audit, `${ns}-v`).length, 'the audit log has the phase write (see above)').to.be.greaterThan(0));
    const before = volumeWrites(audit, `${ns}-v`).length;
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: cls, volumeName: `${ns}-v` }));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Bound'), 60_000);
    expect(volumeWrites(audit, `${ns}-v`).slice(before), 'never Bound and used: no phase written first').to.deep.equal(['spec', 'status']);
  });

  // Upstream's unbindVolume: a volume the controller bound to a claim now bound to another volume
  // loses its claimRef, then is made Available; the process killed between the two writes. The
  // restarted binder ends where an uninterrupted one does: the volume Available and free, its reclaim
  // policy Delete kept (Released would hand it to a deleter), the claim and its volume untouched.
  it("a volume the controller bound to a claim bound elsewhere, unbound, the binder killed between the claimRef's removal and the phase: Available, its Delete kept", async function () {
    const other = `${ns}-v2`;
    extraVolumes.push(other);
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(other, GiB(1), { class: cls }));
    const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...pvc(ns, 'c', GiB(1), { class: cls, volumeName: other }), metadata: { name: 'c', namespace: ns, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } } });
    const ref = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: c.metadata?.uid };
    // As a binder leaves them: c Bound to v2, and v still pointing at c (a binding it lost).
    for (const [name, annotations] of [[other, {}], [`${ns}-v`, { [ANN_BOUND_BY_CONTROLLER]: 'yes' }]] as const) {
      await admin.patch(Resources.persistentVolumes, name, undefined, 'merge', { metadata: { annotations }, spec: { claimRef: ref } });
      await admin.patch(Resources.persistentVolumes, name, undefined, 'merge', { status: { phase: 'Bound' } }, { subresource: 'status' });
    }
    await admin.patch(Resources.persistentVolumeClaims, 'c', ns, 'merge', { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: GiB(1) } } }, { subresource: 'status' });
    const killed = await startBinderManager(`${ns}-killed`, { leaderElect: false, env: { ...process.env, TOPOVOL_FAILPOINTS: 'binder-volume-unbound' }, waitUntilReady: false });
    procs.push(killed);
    expect(await killed.waitForExit(), 'killed by its failpoint').to.equal(-1);
    const half = await getPV(admin, `${ns}-v`);
    expect([half.spec?.claimRef, half.status?.phase], 'the claimRef removed, the phase not written').to.deep.equal([undefined, 'Bound']);
    procs.push(await startBinderManager(`${ns}-second`, { leaderElect: false }));
    await eventually(async () => {
      const v = await getPV(admin, `${ns}-v`);
      expect([v.status?.phase, v.spec?.claimRef, v.spec?.persistentVolumeReclaimPolicy]).to.deep.equal(['Available', undefined, 'Delete']);
    }, 60_000);
    const [v2, now] = [await getPV(admin, other), await getPVC(admin, ns, 'c')];
    expect([v2.status?.phase, v2.spec?.claimRef?.uid, now.status?.phase, now.spec?.volumeName]).to.deep.equal(['Bound', c.metadata?.uid, 'Bound', other]);
  });
});
