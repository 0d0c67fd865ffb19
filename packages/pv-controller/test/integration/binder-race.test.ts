import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { deleteNow, pv, pvc, RunningBinder } from './binder-harness.js';

async function inBatches<T>(items: T[], size: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

// No PV is ever bound to two claims, with 16 workers racing.
describe('pv-binder: 1,000 claims racing for 500 volumes (16 workers)', function () {
  this.timeout(600_000);
  let admin: KubeClient;
  let binder: RunningBinder;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start(['--concurrent-pv-binder-syncs=16']);
  });
  after(async function () {
    await binder?.stop();
  });

  for (const round of [1, 2, 3]) {
    it(`round ${round}: exactly 500 claims Bound, each volume to at most one claim`, async function () {
      const ns = await createTestNamespace(admin, 'race-');
      const cls = `${ns}-race`;
      await inBatches([...Array(500).keys()], 50, (i) => admin.create(Resources.persistentVolumes, pv(`${ns}-pv-${i}`, '1Gi', { class: cls })));
      await inBatches([...Array(1000).keys()], 50, (i) => admin.create(Resources.persistentVolumeClaims, pvc(ns, `c-${i}`, '1Gi', { class: cls })));
      const claims = await eventually(async () => {
        const list = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items;
        expect(list.filter((c) => c.status?.phase === 'Bound')).to.have.length(500);
        return list;
      }, 300_000, 1000);
      const volumes = (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`));
      // Each volume names one claim, and that claim names the volume back.
      const byClaim = new Map<string, string>();
      for (const v of volumes) {
        const ref = v.spec?.claimRef;
        expect(ref, v.metadata?.name).to.not.equal(undefined);
        expect(byClaim.has(ref!.name!), `claim ${ref!.name} referenced twice`).to.equal(false);
        byClaim.set(ref!.name!, v.metadata!.name!);
      }
      const boundNames = new Set<string>();
      for (const c of claims.filter((x) => x.status?.phase === 'Bound')) {
        expect(byClaim.get(c.metadata!.name!)).to.equal(c.spec?.volumeName);
        expect(boundNames.has(c.spec!.volumeName!)).to.equal(false);
        boundNames.add(c.spec!.volumeName!);
      }
      expect(claims.filter((c) => c.status?.phase !== 'Bound').every((c) => !c.spec?.volumeName)).to.equal(true);
      await inBatches(volumes, 50, (v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!));
      // The claims too: left behind, 1,000 claims a round (half of them Lost once their volumes go)
      // are work for the next suite's binder, whose own scenario then waits behind their writes.
      await inBatches(claims, 50, (c) => deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, ns));
    });
  }
});
