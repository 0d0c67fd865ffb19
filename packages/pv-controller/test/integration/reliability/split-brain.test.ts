import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { FaultProxy, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import { BindingWorkload } from './binding-workload.js';
import { CHAOS_SCALE, kubeconfigVia, recordChaosResult, startBinderManager } from './chaos-harness.js';

// The worst case of "two managers both trying to lead": two binders that both lead, here because
// leader election is off on both (two replicas of a misconfigured Deployment; any lease bug has
// the same effect). Both race for every claim. Two binders with the same view make the same
// choices, so the test makes their views differ: one binder's requests are slowed (its writes land
// late) and the other starts once the claims exist (it lists them in name order, not creation
// order); they then pick the same free volume for different claims. Only the resourceVersion precondition on
// every write keeps one binding per volume: the loser's write gets 409 Conflict, and it decides
// again from what it reads next. kube-controller-manager's binder relies on the same fencing
// (pkg/controller/volume/persistentvolume/pv_controller.go updates with the object's resourceVersion).
describe('reliability: two binders acting at once (split brain)', function () {
  this.timeout(600_000);
  let cp: ControlPlane;

  before(async function () {
    cp = await sharedControlPlane();
  });

  it('every claim is Bound to its own volume and no volume to two claims, though both bind every claim', async function () {
    const admin = cp.adminClient();
    const w = await BindingWorkload.create(admin, 'rel-split-');
    const procs: ManagedProcess[] = [];
    let convergeSeconds = 0;
    let settled: Awaited<ReturnType<BindingWorkload['settle']>> | undefined;
    try {
      const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 3);
      try {
        proxy.set({ delay: 1, delayMs: 200 });
        procs.push(await startBinderManager(`${w.ns}-slow`, { leaderElect: false, kubeconfig: await kubeconfigVia(proxy.url, `${w.ns}-slow`) }));
        const started = Date.now();
        const claims = 100 * CHAOS_SCALE;
        await Promise.all([w.volumesThenClaims(claims), w.storm(2)]);
        procs.push(await startBinderManager(`${w.ns}-fast`, { leaderElect: false }));
        settled = await w.settle(new Map(), 180_000);
        convergeSeconds = (Date.now() - started) / 1000;
      } finally {
        await proxy.stop();
      }
      const { violations, allBound } = settled;
      recordChaosResult({ scenario: 'split brain', fault: 'two binders with leader election off + conflict storm', intensity: 'whole run', operations: w.operations, violations: violations.length, convergeSeconds });
      expect(violations).to.deep.equal([]);
      expect(allBound).to.equal(true);
      for (const p of procs) expect(p.running, `${p.name} exited:\n${p.logTail(20)}`).to.equal(true);
    } finally {
      await Promise.all(procs.map((p) => p.kill()));
      await w.cleanup();
    }
  });
});
