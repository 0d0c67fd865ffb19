import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { NODE_1, NODE_2, NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';
import { spreadStatefulSet, STATEFUL_SETS } from './statefulset.js';

// KEP-490 "Topology-aware volume scheduling", test plan: a StatefulSet with pod anti-affinity on
// local PVs. kube-controller-manager's statefulset controller creates the pods and claims, the real
// kube-scheduler picks each pod's node with its claim's PV, Topovol's pv-binder completes the
// binding the scheduler pre-bound (the scheduler's PreBind waits for it). The test reports each
// scheduled pod Running and Ready in place of the kubelet, so the next replica is created.
describe('StatefulSet with pod anti-affinity on local volumes', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-sts-');

  it('three replicas, a local PV on each of three nodes: three pods on three nodes, each with its node\'s PV', async function () {
    const cls = await s.localClass('local');
    await s.localVolumes(cls, 'pv', { [NODES[0]]: 1, [NODES[1]]: 1, [NODES[2]]: 1 });
    await s.create(STATEFUL_SETS, spreadStatefulSet(s.ns, 'web', 3, cls));
    const placed = await s.until('three replicas running', async () => {
      const p = await s.runScheduledPods();
      expect([...p.keys()].sort()).to.deep.equal(['web-0', 'web-1', 'web-2']);
      return p;
    });
    expect(new Set(placed.values()).size, 'one replica per node').to.equal(3);
    for (const [pod, node] of placed) await s.boundOn(`data-${pod}`, node);
  });

  it('negative: three local PVs on only two nodes: two replicas run, the third stays Pending and says why', async function () {
    const cls = await s.localClass('local');
    await s.localVolumes(cls, 'pv', { [NODE_1]: 2, [NODE_2]: 1 });
    await s.create(STATEFUL_SETS, spreadStatefulSet(s.ns, 'web', 3, cls));
    const placed = await s.until('two replicas running and the third created', async () => {
      const p = await s.runScheduledPods();
      expect([...p.keys()].sort()).to.deep.equal(['web-0', 'web-1']);
      await s.pod('web-2');
      return p;
    });
    expect([...placed.values()].sort()).to.deep.equal([NODE_1, NODE_2]);
    for (const [pod, node] of placed) await s.boundOn(`data-${pod}`, node);
    // What `kubectl describe pod web-2` shows: node 1 still has a free PV but runs a replica; the
    // others have no free PV (the scheduler reports each node's first failing filter).
    const why = await s.unschedulable('web-2', ["1 node(s) didn't match pod anti-affinity rules", "2 node(s) didn't find available persistent volumes to bind"]);
    expect(why.reason).to.equal('Unschedulable');
    expect(why.message).to.match(/^0\/3 nodes are available: /);
    expect((await s.pod('web-2')).spec?.nodeName).to.equal(undefined);
    // Delayed binding kept node 1's other PV free: bound at once, it would pin web-2 where it cannot run.
    await s.waitingFor('data-web-2', 'web-2');
    const onNode1 = await Promise.all([0, 1].map((i) => s.admin.get<PersistentVolume>(Resources.persistentVolumes, s.name(`pv-${NODE_1}-${i}`))));
    expect(onNode1.map((v) => v.status?.phase)).to.have.members(['Bound', 'Available']);
  });
});
