import { expect } from 'chai';
import { ControlPlane, eventually } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { BindingWorkload } from './binding-workload.js';
import { CHAOS_SCALE, recordChaosResult, startBinderManager } from './chaos-harness.js';

// The API server or etcd goes away in the middle of a burst of bindings and comes back (an upgrade,
// an OOM kill). The manager runs as an operator runs it (the real binary, its own ServiceAccount)
// with leader election off: with it on, losing the API server for longer than the renew deadline
// makes the manager exit by design (as kube-controller-manager), which the leader scenarios cover.
// Afterwards every claim is Bound to its own volume, none Bound before is lost, and the manager
// never crashed.
//
// The scenarios own their control plane: a kube-apiserver that has just started refuses requests
// until its RBAC informers have synced (a real cluster does the same), and those refusals must not
// reach the shared control plane's audit log, which the RBAC coverage check reads (every refusal
// of a loop's ServiceAccount there is a missing rule).
describe('reliability: the control plane restarts during a burst of bindings', function () {
  this.timeout(600_000);
  let cp: ControlPlane;

  before(async function () {
    cp = new ControlPlane();
    await cp.start();
  });
  after(async function () {
    await cp?.stop();
  });

  const scenarios: { name: string; fault: string; intensity: string; act: () => Promise<void> }[] = [
    { name: 'kube-apiserver stopped and started again (new process, same etcd and port)', fault: 'kube-apiserver restart', intensity: 'once, mid-burst', act: () => cp.restartApiServer() },
    { name: 'etcd SIGKILLed, down for 3 s, started again on the same data', fault: 'etcd kill + restart', intensity: `once, down 3 s`, act: () => cp.restartEtcd(3_000, 0) },
  ];

  for (const s of scenarios) {
    it(`${s.name}: every claim Bound to its own volume, none lost, the manager still running`, async function () {
      const admin = cp.adminClient();
      const w = await BindingWorkload.create(admin, 'rel-cp-');
      let mgr: ManagedProcess | undefined;
      try {
        mgr = await startBinderManager(`${w.ns}-mgr`, { leaderElect: false, controlPlane: cp });
        await w.pairs(10 * CHAOS_SCALE);
        await w.untilAllBound(120_000);
        const before = await w.bound();

        const burstSize = 30 * CHAOS_SCALE;
        const burst = w.pairs(burstSize, 4);
        // Mid-burst: a third of it created.
        await eventually(() => expect(w.created).to.be.at.least(before.size + burstSize / 3), 120_000, 100);
        await s.act();
        const faultEnded = Date.now();
        await burst;
        await w.untilAllBound(240_000);
        const convergeSeconds = (Date.now() - faultEnded) / 1000;

        const violations = await w.violations(before);
        recordChaosResult({ scenario: 'control plane restart', fault: s.fault, intensity: s.intensity, operations: w.operations, violations: violations.length, convergeSeconds });
        expect(violations).to.deep.equal([]);
        expect(mgr.running, `the manager exited:\n${mgr.logTail(20)}`).to.equal(true);
      } finally {
        await mgr?.stop();
        await w.cleanup();
      }
    });
  }
});
