import { expect } from 'chai';
import { logger } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
import { RollbackReconciler } from '../../src/rollback/reconcile-rollback.js';
import type { RollbackGlueDeps } from '../../src/rollback/reconcile-rollback.js';
import { claim, node, pod, pv, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// What the rollback loop's glue remembers per pod must go with the pod: a tenant creating and
// deleting pods that wait would otherwise grow it without end.
describe('RollbackReconciler: memory per pod', function () {
  it('a pod remembered waiting is forgotten when it is deleted (deleted unscheduled, it has no update that ends the wait)', async function () {
    const P: Pod = pod('p', ['c1', 'c2']);
    const w: W = { pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a' })], claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], nodes: [node('a', { unschedulable: true }), node('b')], pods: [P] };
    const deps = {
      world: world(w),
      pod: () => P,
      record: () => undefined,
      actuator: { decide: () => Promise.resolve() },
      log: logger(),
      dryRun: false,
      historyTtlMs: 0,
      observe: () => undefined,
      enqueueRecord: () => undefined,
    } as unknown as RollbackGlueDeps;
    const r = new RollbackReconciler(deps);
    expect(await r.pod('ns', 'p'), 'it waits the grace').to.be.a('number');
    expect(r.waitingPods()).to.equal(1);
    r.forgetPod(P.metadata!.uid!);
    expect(r.waitingPods()).to.equal(0);
  });
});
