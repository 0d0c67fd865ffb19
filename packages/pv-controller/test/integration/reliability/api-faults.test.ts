import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { bindingViolations, createTestNamespace, eventually, FaultProxy, sharedControlPlane } from '@topovol/shared/testing';
import type { ControlPlane } from '@topovol/shared/testing';
import { deleteNow, pv, pvc, RunningBinder } from './binder-harness.js';

// The binder behind a proxy that throttles (429 + Retry-After), fails (500/503), resets
// connections, delays, and cuts watch streams mid-event, while a foreign writer keeps changing the
// same claims and volumes (a conflict storm). Afterwards the binding invariants must hold and every
// claim must be Bound: faults may slow the binder, never make it bind wrongly or lose a binding.
describe('pv-binder under API faults and a conflict storm (fault proxy in front of the real API server)', function () {
  this.timeout(480_000);
  let cp: ControlPlane;
  let proxy: FaultProxy;
  let binder: RunningBinder | undefined;

  before(async function () {
    cp = await sharedControlPlane();
    proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 42);
  });
  after(async function () {
    await binder?.stop();
    await proxy?.stop();
  });

  it('every claim ends Bound to its own volume; no claim Bound before the faults is lost', async function () {
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'faults-');
    const cls = `${ns}-c`;
    binder = await RunningBinder.start([], { client: proxy.client(cp.adminToken) });
    const pair = async (i: number): Promise<void> => {
      await admin.create(Resources.persistentVolumes, pv(`${ns}-pv-${i}`, '1Gi', { class: cls }));
      await admin.create(Resources.persistentVolumeClaims, pvc(ns, `c-${i}`, '1Gi', { class: cls }));
    };
    const claims = async (): Promise<PersistentVolumeClaim[]> => (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items;
    const volumes = async (): Promise<PersistentVolume[]> => (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`));

    // Before: 10 pairs bound with no faults.
    await Promise.all([...Array(10).keys()].map(pair));
    await eventually(async () => expect((await claims()).filter((c) => c.status?.phase === 'Bound')).to.have.length(10), 120_000, 250);
    const boundBefore = new Map((await claims()).map((c) => [`${ns}/${c.metadata!.name}`, c.spec!.volumeName!]));

    // During: 40 more pairs, faults on every kind, and a foreign writer annotating everything.
    proxy.set({ throttle: 0.1, serverError: 0.1, reset: 0.05, delay: 0.1, delayMs: 300, cutWatch: 0.3 });
    const storm = (async () => {
      for (let round = 0; round < 5; round++) {
        for (const c of await claims()) await admin.patch(Resources.persistentVolumeClaims, c.metadata!.name!, ns, 'merge', { metadata: { annotations: { 'chaos.topovol.test/round': String(round) } } }).catch(() => undefined);
        for (const v of await volumes()) await admin.patch(Resources.persistentVolumes, v.metadata!.name!, undefined, 'merge', { metadata: { annotations: { 'chaos.topovol.test/round': String(round) } } }).catch(() => undefined);
      }
    })();
    await Promise.all([...Array(40).keys()].map((i) => pair(10 + i)));
    await storm;
    // Faults stay on until every kind has happened, whatever the machine's speed (every watch open
    // when they were turned on was cut; later watches are few, so one cut is enough).
    await eventually(() => {
      for (const kind of ['throttle', 'serverError', 'reset', 'delay'] as const) expect(proxy.counts[kind], kind).to.be.at.least(3);
      expect(proxy.counts.cutWatch, 'cutWatch').to.be.at.least(1);
    }, 120_000, 250);
    proxy.set({});

    // After: every claim Bound, and the invariants hold.
    await eventually(async () => expect((await claims()).filter((c) => c.status?.phase === 'Bound')).to.have.length(50), 180_000, 500);
    expect(bindingViolations(await claims(), await volumes(), boundBefore)).to.deep.equal([]);
    for (const v of await volumes()) await deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!);
  });
});
