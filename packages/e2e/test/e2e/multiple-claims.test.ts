import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { claim, podWithClaims } from '@topovol/testing';
import { NODE_1, NODE_2, NODE_3 } from './e2e-stack.js';
import { Scenario } from './scenario.js';

// KEP-490's motivating example and test plan: a pod with two claims, one for a local SSD (fast data)
// and one for a local HDD (logs). Bound one by one, before scheduling, they could land on two nodes
// and the pod could never run; with delayed binding the scheduler finds the node with both.
describe('a pod with several claims on local volumes', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-multi-');

  async function fastAndSlow(fastOn: string[], slowOn: string[]): Promise<void> {
    const fast = await s.localClass('fast');
    const slow = await s.localClass('slow');
    const ssd = await s.localVolumes(fast, 'ssd', Object.fromEntries(fastOn.map((n) => [n, 1])));
    const hdd = await s.localVolumes(slow, 'hdd', Object.fromEntries(slowOn.map((n) => [n, 1])), '10Gi');
    await s.available([...ssd, ...hdd]);
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'data', '1Gi', fast));
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'logs', '10Gi', slow));
    await s.create(Resources.pods, podWithClaims(s.ns, 'app', ['data', 'logs']));
  }

  it('lands on the one node with a PV for each claim, and both claims are bound there', async function () {
    await fastAndSlow([NODE_1, NODE_2], [NODE_2, NODE_3]);
    expect(await s.scheduled('app')).to.equal(NODE_2);
    await s.boundOn('data', NODE_2);
    await s.boundOn('logs', NODE_2);
  });

  it('negative: no node has a PV for each claim: the pod stays Pending, says why, and no claim is bound', async function () {
    await fastAndSlow([NODE_1], [NODE_3]);
    await s.unschedulable('app', ["3 node(s) didn't find available persistent volumes to bind"]);
    // Nothing half done: neither claim took a volume that would pin the pod to a node.
    for (const c of ['data', 'logs']) await s.waitingFor(c, 'app');
    const volumes = (await s.admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.spec?.storageClassName?.startsWith(s.ns));
    expect(volumes.map((v) => [v.metadata?.name, v.status?.phase, v.spec?.claimRef?.name])).to.have.deep.members([
      [s.name(`ssd-${NODE_1}-0`), 'Available', undefined],
      [s.name(`hdd-${NODE_3}-0`), 'Available', undefined],
    ]);
  });
});
