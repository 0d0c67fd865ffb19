import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { eventually, FaultProxy, INSTALL_NAMESPACE, installGeneratedRbac, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { RunningBinder } from '../binder-harness.js';
import { BindingWorkload } from './binding-workload.js';
import { CHAOS_SCALE, recordChaosResult } from './chaos-harness.js';

// The binder behind a proxy that throttles (429 + Retry-After), fails (500/503), resets
// connections (before a request, or after a write was applied: its answer lost), delays, and cuts
// watch streams mid-event, while a foreign writer keeps changing the
// same claims and volumes (a conflict storm). Afterwards the binding invariants must hold and every
// claim must be Bound: faults may slow the binder, never make it bind wrongly or lose a binding.
describe('reliability: pv-binder under API faults and a conflict storm (fault proxy in front of the real API server)', function () {
  this.timeout(600_000);
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
    const w = await BindingWorkload.create(cp.adminClient(), 'faults-');
    try {
      // As its own ServiceAccount: what the binder reads back after a lost answer must be within its role.
      await installGeneratedRbac(cp);
      binder = await RunningBinder.start([], { client: proxy.client(await cp.serviceAccountToken(INSTALL_NAMESPACE, 'topovol-pv-binder')) });
      await w.pairs(10 * CHAOS_SCALE);
      await w.untilAllBound(120_000);
      const before = await w.bound();

      const rates = { throttle: 0.1, serverError: 0.1, reset: 0.05, lostAnswer: 0.05, delay: 0.1, delayMs: 300, cutWatch: 0.3 };
      proxy.set(rates);
      await Promise.all([w.pairs(40 * CHAOS_SCALE), w.storm(5)]);
      // Faults stay on until every kind has happened, whatever the machine's speed (every watch open
      // when they were turned on was cut; later watches are few, so one cut is enough).
      await eventually(() => {
        for (const kind of ['throttle', 'serverError', 'reset', 'lostAnswer', 'delay'] as const) expect(proxy.counts[kind], kind).to.be.at.least(3);
        expect(proxy.counts.cutWatch, 'cutWatch').to.be.at.least(1);
      }, 120_000, 250);
      proxy.set({});
      const faultsEnded = Date.now();

      await w.untilAllBound(180_000);
      const violations = await w.violations(before);
      recordChaosResult({
        scenario: 'API faults',
        fault: '429, 500/503, resets, lost answers, delays, watch cuts + conflict storm',
        intensity: '10% / 10% / 5% / 5% of writes / 10% (300 ms) / 30% of watches',
        operations: w.operations,
        violations: violations.length,
        convergeSeconds: (Date.now() - faultsEnded) / 1000,
      });
      expect(violations).to.deep.equal([]);
    } finally {
      await binder?.stop();
      binder = undefined;
      await w.cleanup();
    }
  });
});
