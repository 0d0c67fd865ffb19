import { expect } from 'chai';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane, startKubeControllerManager } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { deleteNow, eventFor, getPV, GiB, pv, pvc, RunningBinder } from './binder-harness.js';

async function secondBinderWrites(): Promise<number> {
  const m = metricsRegistry.getSingleMetric('topovol_pv_binder_second_binder_writes_total');
  return m ? (await m.get()).values.reduce((s, v) => s + v.value, 0) : 0;
}

/**
 * Two binders at once (kube-controller-manager's not turned off) can bind one claim to two volumes
 * and release the one whose claim write lost (docs/install.md, "one binder per cluster"). Topovol
 * cannot stop the other one; it says so where an operator looks, as soon as it sees it bind.
 */
describe('pv-binder next to kube-controller-manager\'s binder (real API server)', function () {
  this.timeout(180_000);

  it('a binding kube-controller-manager writes while Topovol runs is reported: a SecondBinderRunning Warning on the volume, and a metric', async function () {
    const cp = await sharedControlPlane();
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'second-');
    const v = `${ns}-v`;
    const before = await secondBinderWrites();
    const binder = await RunningBinder.start();
    let kcm: ManagedProcess | undefined;
    try {
      await admin.create(Resources.persistentVolumes, pv(v, GiB(1), { class: `${ns}-gold` }));
      await eventually(async () => expect((await getPV(admin, v)).status?.phase).to.equal('Available'));
      // What Topovol leaves alone and kube-controller-manager binds (docs/divergences.md): a claim
      // marked bind-completed by hand, naming a free volume of another class.
      const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', GiB(1), { volumeName: v, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }));
      await eventFor(admin, c, 'VolumeMismatch');
      kcm = await startKubeControllerManager(cp, ['persistentvolume-binder-controller'], ['--pvclaimbinder-sync-period=2s']);
      await eventually(async () => expect((await getPV(admin, v)).spec?.claimRef?.name).to.equal('c'), 60_000);
      const warning = await eventFor(admin, await getPV(admin, v), 'SecondBinderRunning');
      expect(warning.type).to.equal('Warning');
      expect(warning.message).to.match(/--controllers=\*,-persistentvolume-binder-controller/);
      expect(await secondBinderWrites()).to.be.greaterThan(before);
    } finally {
      await kcm?.stop();
      await binder.stop();
      await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns).catch(() => undefined);
      await deleteNow(admin, Resources.persistentVolumes, v).catch(() => undefined);
    }
  });
});
