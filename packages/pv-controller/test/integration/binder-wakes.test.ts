import { expect } from 'chai';
import { projectClaim, projectPod, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, metricSum, sharedControlPlane } from '@topovol/testing';
import { deleteNow, eventFor, getPV, getPVC, heldVolume, pv, pvc, RunningBinder } from './binder-harness.js';

const binderAdds = (): Promise<number> => metricSum('workqueue_adds_total', { name: 'pv-binder' });

const WAITING = 20;
const HOLDS = ['gone', 'phase', 'named-held'];

// A free volume's event queues every waiting claim of its class again only when it may give one of
// them a volume it could not take before (volume-offer.ts): the volume became free, or offers
// something else. Its own status writes do not: at 10,000 waiting claims one walk per such write
// was most of what the binder spent besides its requests (hack/bench/README.md).
describe('pv-binder: which volume events queue waiting claims again (real API server)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    // No periodic re-sync in the window: only events queue keys.
    binder = await RunningBinder.start(['--pvclaimbinder-sync-period=10m']);
    ns = await createTestNamespace(admin, 'wakes-');
  });
  after(async function () {
    await binder?.stop();
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-small`).catch(() => undefined);
    await deleteNow(admin, Resources.persistentVolumes, `${ns}-named`).catch(() => undefined);
    for (const tag of HOLDS) {
      await deleteNow(admin, Resources.persistentVolumes, `${ns}-${tag}`).catch(() => undefined);
      await admin.delete(Resources.storageClasses, `${ns}-${tag}`).catch(() => undefined);
    }
    await admin.delete(Resources.storageClasses, ns).catch(() => undefined);
    await admin.delete(Resources.storageClasses, `${ns}-late`).catch(() => undefined);
  });

  /**
   * Resolves once the binder's informer for `resource` has handed this resourceVersion to its
   * handlers (ours is added after the binder's), and the turn after, where keys are queued.
   */
  function handledBy<T extends KubeObject>(informer: { addEventHandler(h: { onUpdate: (old: T, o: T) => void }): void }): (rv: string) => Promise<void> {
    const arrived = new Set<string>();
    const waiting = new Map<string, () => void>();
    informer.addEventHandler({
      onUpdate: (_, o) => {
        const rv = o.metadata?.resourceVersion ?? '';
        arrived.add(rv);
        waiting.get(rv)?.();
      },
    });
    // The event may come before the write's answer.
    return (rv) => new Promise<void>((resolve) => (arrived.has(rv) ? resolve() : waiting.set(rv, resolve))).then(() => new Promise((r) => setImmediate(r)));
  }

  /** The work-queue adds one write caused, once the binder has handled its event. */
  async function addsOf<T extends KubeObject>(handled: (rv: string) => Promise<void>, write: () => Promise<T>): Promise<number> {
    // Earlier reconciles (Pending, nothing to write) settle first.
    await new Promise((r) => setTimeout(r, 300));
    const before = await binderAdds();
    const written = await write();
    await handled(written.metadata!.resourceVersion!);
    return (await binderAdds()) - before;
  }

  it('a status-only write of a free volume queues no waiting claim; a label change queues them all', async function () {
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: ns }, provisioner: 'kubernetes.io/no-provisioner' });
    const volumeName = `${ns}-small`;
    await admin.create(Resources.persistentVolumes, pv(volumeName, '1Gi', { class: ns }));
    // Claims too big for the volume: they wait, Pending, in its class.
    for (let i = 0; i < WAITING; i++) await admin.create(Resources.persistentVolumeClaims, pvc(ns, `big-${i}`, '10Gi', { class: ns }));
    await eventually(async () => expect((await getPV(admin, volumeName)).status?.phase).to.equal('Available'));

    const handled = handledBy<PersistentVolume>(binder.informers.forResource<PersistentVolume>(Resources.persistentVolumes));
    const write = async (change: (v: PersistentVolume) => Promise<PersistentVolume>): Promise<number> => addsOf(handled, async () => change(await getPV(admin, volumeName)));

    const statusAdds: number[] = [];
    for (let i = 0; i < 3; i++) {
      statusAdds.push(await write((v) => admin.replaceStatus(Resources.persistentVolumes, { ...v, status: { ...v.status, phase: 'Available', message: `note ${i}` } })));
    }
    const labelAdds = await write((v) => admin.replace(Resources.persistentVolumes, { ...v, metadata: { ...v.metadata, labels: { tier: 'gold' } } }));

    expect(labelAdds, 'a label change queues every waiting claim of the class (and the volume)').to.be.at.least(WAITING);
    for (const n of statusAdds) expect(n, 'a status-only write queues the volume, not the waiting claims').to.be.below(WAITING);
  });

  // A pod's update queues its claims only when what their decisions read of it changed
  // (consumer-change.ts): kube-scheduler's status writes on a pod that waits do not.
  it("a pending pod's status write queues none of its claims; its binding to a node does", async function () {
    const cls = `${ns}-late`;
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' });
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'late', '1Gi', { class: cls }));
    await admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: ns },
      spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'late' } }] },
    });
    const pods = binder.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
    const handled = handledBy<Pod>(pods);
    const getPod = (): Promise<Pod> => admin.get<Pod>(Resources.pods, 'p', ns);
    // The creates' own events queue the claim: the counts start once the binder's caches hold all
    // three (its handlers run as each is cached), not a fixed time after the answers.
    await eventually(() => {
      expect(binder.informers.forResource<StorageClass>(Resources.storageClasses).cache.get(cls), 'the class in the binder\'s cache').to.not.equal(undefined);
      expect(binder.informers.forResource(Resources.persistentVolumeClaims, { transform: projectClaim }).cache.get(`${ns}/late`), 'the claim in the binder\'s cache').to.not.equal(undefined);
      expect(pods.cache.get(`${ns}/p`), 'the pod in the binder\'s cache').to.not.equal(undefined);
    });

    const statusAdds: number[] = [];
    for (let i = 0; i < 3; i++) {
      statusAdds.push(
        await addsOf(handled, async () => {
          const p = await getPod();
          const condition = { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: `attempt ${i}`, lastTransitionTime: new Date().toISOString() };
          return admin.replaceStatus(Resources.pods, { ...p, status: { ...p.status, conditions: [condition] } });
        }),
      );
    }
    const bindAdds = await addsOf(handled, async () => {
      await admin.request('POST', `/api/v1/namespaces/${ns}/pods/p/binding`, { body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'p', namespace: ns }, target: { apiVersion: 'v1', kind: 'Node', name: `${ns}-node` } } });
      return getPod();
    });

    expect(statusAdds, 'status writes queue nothing').to.deep.equal([0, 0, 0]);
    expect(bindAdds, 'the binding queues the claim').to.be.at.least(1);
    await admin.delete(Resources.pods, 'p', ns, { gracePeriodSeconds: 0 });
  });

  // Upstream's binder leaves a claim naming a volume not there yet to its periodic re-sync (15 s);
  // here the volume's add queues it (binder-indexes.ts, claimWaitingForVolume).
  it('a claim naming a volume that does not exist yet binds when the volume appears, with no re-sync', async function () {
    const claims = binder.informers.forResource(Resources.persistentVolumeClaims, { transform: projectClaim });
    const before = await binderAdds();
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'named', '1Gi', { volumeName: `${ns}-named` }));
    // The binder has decided the claim (its key was taken) with no volume to bind.
    await eventually(() => expect(claims.cache.get(`${ns}/named`)).to.not.equal(undefined));
    await eventually(async () => expect(await binderAdds()).to.be.above(before));
    await new Promise((r) => setTimeout(r, 500));
    await admin.create(Resources.persistentVolumes, pv(`${ns}-named`, '1Gi'));
    await eventually(async () => {
      const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'named', ns);
      expect([c.status?.phase, c.spec?.volumeName]).to.deep.equal(['Bound', `${ns}-named`]);
    }, 20_000);
    expect((await getPV(admin, `${ns}-named`)).spec?.claimRef?.name).to.equal('named');
  });

  /**
   * A volume held for `${tag}-holder` (binder-harness.ts, heldVolume), and `${tag}-waiter`, which
   * fits it and has been decided (passed it over). When the hold ends the volume's own key has
   * nothing to write, so no volume event tells the waiter: the holder's event must
   * (binder-controller.ts, holdsEnded).
   */
  async function heldWithWaiter(tag: string): Promise<{ held: string; waiter: PersistentVolumeClaim; lift: () => Promise<void> }> {
    const held = `${ns}-${tag}`;
    const { lift } = await heldVolume(admin, binder, ns, held, `${tag}-holder`);
    try {
      const waiter = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, `${tag}-waiter`, '1Gi', { class: held }));
      await eventFor(admin, waiter, 'ProvisioningFailed');
      expect((await getPVC(admin, ns, `${tag}-waiter`)).status?.phase, 'the waiter passed the held volume over').to.equal('Pending');
      expect((await getPV(admin, held)).spec?.claimRef, 'the held volume').to.equal(undefined);
      return { held, waiter, lift };
    } catch (err) {
      await lift();
      throw err;
    }
  }

  async function boundTo(waiter: PersistentVolumeClaim, held: string): Promise<void> {
    await eventually(async () => {
      const c = await getPVC(admin, ns, waiter.metadata!.name!);
      expect([c.status?.phase, c.spec?.volumeName]).to.deep.equal(['Bound', held]);
    }, 30_000);
    expect((await getPV(admin, held)).spec?.claimRef?.uid).to.equal(waiter.metadata?.uid);
  }

  it('a claim that held an Available volume is deleted: the claims of its class that passed it over bind it, with no re-sync', async function () {
    const { held, waiter, lift } = await heldWithWaiter('gone');
    try {
      // Without its pvc-protection finalizer the delete is immediate: the delete event is the first
      // the binder hears of it, with the claim still Bound.
      await admin.patch(Resources.persistentVolumeClaims, 'gone-holder', ns, 'merge', { metadata: { finalizers: null } });
      await admin.delete(Resources.persistentVolumeClaims, 'gone-holder', ns);
      await boundTo(waiter, held);
    } finally {
      await lift();
    }
  });

  // Only binders write a claim's phase: another binder, a restore tool, or by hand.
  it('a claim that held an Available volume leaves phase Bound (a status write): the claims that passed it over bind it, with no re-sync', async function () {
    const { held, waiter, lift } = await heldWithWaiter('phase');
    try {
      await admin.patch(Resources.persistentVolumeClaims, 'phase-holder', ns, 'merge', { status: { phase: 'Pending' } }, { subresource: 'status' });
      await boundTo(waiter, held);
    } finally {
      await lift();
    }
  });

  it('a claim that names a held volume binds it once the claim that held it is deleted, with no re-sync', async function () {
    const held = `${ns}-named-held`;
    const { lift } = await heldVolume(admin, binder, ns, held, 'named-holder');
    try {
      const namer = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'namer', '1Gi', { class: held, volumeName: held }));
      expect((await eventFor(admin, namer, 'FailedBinding')).message).to.contain('is held for another claim');
      await admin.patch(Resources.persistentVolumeClaims, 'named-holder', ns, 'merge', { metadata: { finalizers: null } });
      await admin.delete(Resources.persistentVolumeClaims, 'named-holder', ns);
      await boundTo(namer, held);
    } finally {
      await lift();
    }
  });
});
