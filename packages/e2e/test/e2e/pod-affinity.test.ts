import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import { claim, podAffinity, podWithClaims } from '@topovol/testing';
import { NODE_1, NODE_2, NODE_3 } from './e2e-stack.js';
import { Scenario } from './scenario.js';

const PODS = ['cache-0', 'cache-1', 'cache-2'];

// KEP-490 test plan: pods with pod affinity to each other (they must share a node), each with a
// local claim. Binding waits for the scheduler, so the claims follow the pods to the one node that
// can hold them all; bound at once, they would be scattered over the nodes.
describe('pod affinity on local volumes', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-affinity-');

  async function createPods(cls: string): Promise<void> {
    const labels = { app: 'cache' };
    for (const p of PODS) {
      await s.create(Resources.persistentVolumeClaims, claim(s.ns, `data-${p}`, '1Gi', cls));
      await s.create(Resources.pods, podWithClaims(s.ns, p, [`data-${p}`], { labels, affinity: podAffinity('podAffinity', labels) }));
    }
  }

  it('three pods that must share a node all land on the node with three local PVs, with those PVs', async function () {
    const cls = await s.localClass('local');
    await s.localVolumes(cls, 'pv', { [NODE_2]: 3 });
    await createPods(cls);
    for (const p of PODS) expect(await s.scheduled(p), p).to.equal(NODE_2);
    for (const p of PODS) await s.boundOn(`data-${p}`, NODE_2);
  });

  it('negative: one local PV per node: one pod is placed, the others stay Pending and say why', async function () {
    const cls = await s.localClass('local');
    await s.localVolumes(cls, 'pv', { [NODE_1]: 1, [NODE_2]: 1, [NODE_3]: 1 });
    await createPods(cls);
    const { placed, waiting } = await s.until('one pod placed, two reported unschedulable', async () => {
      const pods = await Promise.all(PODS.map((p) => s.pod(p)));
      const on = pods.filter((p) => p.spec?.nodeName);
      expect(on.map((p) => p.metadata?.name), 'placed').to.have.length(1);
      const rest = pods.filter((p) => !p.spec?.nodeName).map((p) => p.metadata!.name!);
      for (const p of rest) await s.unschedulable(p);
      return { placed: on[0]!, waiting: rest };
    });
    await s.boundOn(`data-${placed.metadata!.name!}`, placed.spec!.nodeName!);
    for (const p of waiting) {
      await s.unschedulable(p, ["1 node(s) didn't find available persistent volumes to bind", "2 node(s) didn't match pod affinity rules"]);
      await s.waitingFor(`data-${p}`, p);
    }
  });
});
