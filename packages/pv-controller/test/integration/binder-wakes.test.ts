import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, metricSum, sharedControlPlane } from '@topovol/testing';
import { deleteNow, getPV, pv, pvc, RunningBinder } from './binder-harness.js';

const binderAdds = (): Promise<number> => metricSum('workqueue_adds_total', { name: 'pv-binder' });

const WAITING = 20;

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
    await admin.delete(Resources.storageClasses, ns).catch(() => undefined);
  });

  it('a status-only write of a free volume queues no waiting claim; a label change queues them all', async function () {
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: ns }, provisioner: 'kubernetes.io/no-provisioner' });
    const volumeName = `${ns}-small`;
    await admin.create(Resources.persistentVolumes, pv(volumeName, '1Gi', { class: ns }));
    // Claims too big for the volume: they wait, Pending, in its class.
    for (let i = 0; i < WAITING; i++) await admin.create(Resources.persistentVolumeClaims, pvc(ns, `big-${i}`, '10Gi', { class: ns }));
    await eventually(async () => expect((await getPV(admin, volumeName)).status?.phase).to.equal('Available'));

    // Resolves once the binder's informer has handed this resourceVersion of the volume to its
    // handlers (ours is added after the binder's), and the turn after, where wakes are walked.
    const arrived = new Set<string>();
    const waiting = new Map<string, () => void>();
    binder.informers.forResource<PersistentVolume>(Resources.persistentVolumes).addEventHandler({
      onUpdate: (_, v) => {
        const rv = v.metadata?.resourceVersion ?? '';
        arrived.add(rv);
        waiting.get(rv)?.();
      },
    });
    // The event may come before the write's answer.
    const handled = (rv: string): Promise<void> =>
      new Promise<void>((resolve) => (arrived.has(rv) ? resolve() : waiting.set(rv, resolve))).then(() => new Promise((r) => setImmediate(r)));
    const write = async (change: (v: PersistentVolume) => Promise<PersistentVolume>): Promise<number> => {
      // The claims' own reconciles (Pending, nothing to write) settle first.
      await new Promise((r) => setTimeout(r, 300));
      const before = await binderAdds();
      const written = await change(await getPV(admin, volumeName));
      await handled(written.metadata!.resourceVersion!);
      return (await binderAdds()) - before;
    };

    const statusAdds: number[] = [];
    for (let i = 0; i < 3; i++) {
      statusAdds.push(await write((v) => admin.replaceStatus(Resources.persistentVolumes, { ...v, status: { ...v.status, phase: 'Available', message: `note ${i}` } })));
    }
    const labelAdds = await write((v) => admin.replace(Resources.persistentVolumes, { ...v, metadata: { ...v.metadata, labels: { tier: 'gold' } } }));

    expect(labelAdds, 'a label change queues every waiting claim of the class (and the volume)').to.be.at.least(WAITING);
    for (const n of statusAdds) expect(n, 'a status-only write queues the volume, not the waiting claims').to.be.below(WAITING);
  });
});
