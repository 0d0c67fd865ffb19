import { expect } from 'chai';
import { ANN_BOUND_BY_CONTROLLER, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane, startKubeControllerManager } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import { deleteNow, getPV, getPVC, GiB, pv, pvc, unreferenceByHand } from '../binder-harness.js';
import { startBinderManager } from './chaos-harness.js';

/**
 * Going back to kube-controller-manager's binder (docs/install.md, "Leaving") while Topovol's stopped
 * half-way through a binding: the real manager binary killed by a failpoint between two of its
 * writes, then the real upstream binder started. Topovol writes the fields, values and order
 * upstream writes (a re-binding phase first is the one difference), so upstream completes each
 * binding to the same claim, as Topovol would on its restart.
 */
describe('pv-binder handed back to kube-controller-manager mid-binding (real API server, real upstream binder)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let cls: string;
  const procs: ManagedProcess[] = [];

  beforeEach(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'handover-');
    cls = `${ns}-static`;
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate' });
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, GiB(1), { class: cls, policy: 'Delete' }));
  });

  afterEach(async function () {
    for (const p of procs.splice(0)) await p.stop();
    for (const c of ['c', 'other']) await deleteNow(admin, Resources.persistentVolumeClaims, c, ns, { quiet: true });
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-v`, undefined, { quiet: true });
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
  });

  /**
   * Topovol's binder run with a failpoint until it kills itself there: with `claim`, started and
   * ready, the volume Available, then the claim created; without, started on what is there.
   */
  async function killedAt(failpoint: string, claim?: () => Promise<PersistentVolumeClaim>): Promise<PersistentVolumeClaim | undefined> {
    const killed = await startBinderManager(`${ns}-killed`, { leaderElect: false, env: { ...process.env, TOPOVOL_FAILPOINTS: failpoint }, waitUntilReady: claim !== undefined });
    procs.push(killed);
    let created: PersistentVolumeClaim | undefined;
    if (claim) {
      await eventually(async () => expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Available'));
      created = await claim();
    }
    expect(await killed.waitForExit(), 'killed by its failpoint').to.equal(-1);
    return created;
  }

  const createClaim = (): Promise<PersistentVolumeClaim> => admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { class: cls }));

  async function upstreamBinder(): Promise<void> {
    procs.push(await startKubeControllerManager(cp, ['persistentvolume-binder-controller'], ['--pvclaimbinder-sync-period=2s']));
  }

  /** c Bound to the volume, the volume Bound to c (by uid), never Released on the way. */
  async function expectBoundTo(claim: PersistentVolumeClaim): Promise<void> {
    await eventually(async () => {
      const [c, v] = [await getPVC(admin, ns, 'c'), await getPV(admin, `${ns}-v`)];
      expect([c.status?.phase, c.spec?.volumeName, v.status?.phase, v.spec?.claimRef?.uid]).to.deep.equal(['Bound', `${ns}-v`, 'Bound', claim.metadata?.uid]);
    }, 60_000);
  }

  it("killed after the volume's claimRef: upstream completes the binding to the same claim", async function () {
    const claim = (await killedAt('binder-volume-claimref', createClaim))!;
    const half = await getPV(admin, `${ns}-v`);
    expect([half.spec?.claimRef?.uid, half.status?.phase, half.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER]], 'the claimRef written, the phase not').to.deep.equal([claim.metadata?.uid, 'Available', 'yes']);
    await upstreamBinder();
    await expectBoundTo(claim);
  });

  it("killed after the volume's phase, before the claim: upstream completes the binding to the same claim", async function () {
    const claim = (await killedAt('binder-volume-bound', createClaim))!;
    const [half, c] = [await getPV(admin, `${ns}-v`), await getPVC(admin, ns, 'c')];
    expect([half.spec?.claimRef?.uid, half.status?.phase, c.spec?.volumeName], 'the volume written, the claim not').to.deep.equal([claim.metadata?.uid, 'Bound', undefined]);
    await upstreamBinder();
    await expectBoundTo(claim);
  });

  // Topovol's one difference in order: a claim that may have used its volume re-binds it phase
  // first, so that a stop leaves the volume Bound with no claimRef, which upstream's syncVolume makes
  // Available; the Bound claim's sync then binds it back, as upstream's own re-binding does.
  it('a Bound claim re-bound phase first, killed after the phase: upstream binds the volume back to the same claim', async function () {
    const binder = await startBinderManager(`${ns}-first`, { leaderElect: false });
    procs.push(binder);
    const claim = await createClaim();
    await expectBoundTo(claim);
    await binder.stop();
    await unreferenceByHand(admin, `${ns}-v`);
    await killedAt('binder-volume-phase-first');
    const half = await getPV(admin, `${ns}-v`);
    expect([half.status?.phase, half.spec?.claimRef], 'the phase written, the claimRef not').to.deep.equal(['Bound', undefined]);
    await upstreamBinder();
    await expectBoundTo(claim);
  });
});
