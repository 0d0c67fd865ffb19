import { expect } from 'chai';
import { quantityBytes, Resources } from '@topovol/shared';
import type { CSIStorageCapacity } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';
import { claim, eventsAbout, INSTALL_NAMESPACE, podWithClaims, preferNodes, SELECTED_NODE } from '@topovol/testing';
import { NODE_1, NODE_2, NODE_3, NODE_KEY, NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';

// KEP-1472 "Storage Capacity Tracking" with node-local storage: Topovol's capacity loop runs once per
// node next to that node's driver (config/manager/capacity-per-node), each instance publishing its
// own node's CSIStorageCapacity. The real kube-scheduler's VolumeBinding plugin filters nodes by
// them, so a pod is never sent to a node without room, even one it prefers.
describe('capacity-aware placement with per-node capacity instances', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-capacity-');

  it('each node publishes its own figure, and the scheduler avoids the nodes without room at its first attempt', async function () {
    const room: Record<string, bigint> = { [NODE_1]: 2n * GiB, [NODE_2]: 20n * GiB, [NODE_3]: 2n * GiB };
    const cls = await s.driverClass('csi', room);
    const published = await s.until('every node published its capacity for the class', async () => {
      const items = (await s.admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: INSTALL_NAMESPACE })).items.filter((c) => c.storageClassName === cls);
      const byNode = new Map(items.map((c) => [c.nodeTopology?.matchLabels?.[NODE_KEY] ?? '?', c]));
      expect([...byNode.keys()].sort()).to.deep.equal([...NODES].sort());
      for (const n of NODES) expect(quantityBytes(byNode.get(n)!.capacity), n).to.equal(room[n]);
      return byNode;
    });
    // Each published by that node's instance: its own managed-by value, owned by its pod.
    for (const n of NODES) {
      const c = published.get(n)!;
      expect(c.metadata?.labels?.['csi.storage.k8s.io/managed-by'], n).to.equal(`topovol-capacity-${n}`);
      expect(c.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`), n).to.deep.equal([`Pod/${s.stack.node(n).capacityPod}`]);
    }

    // The pod prefers node 1 (a soft preference, e.g. for data locality), which lacks room.
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'data', '5Gi', cls));
    await s.create(Resources.pods, podWithClaims(s.ns, 'app', ['data'], { affinity: preferNodes(NODE_KEY, NODE_1) }));
    expect(await s.scheduled('app')).to.equal(NODE_2);
    const pv = await s.boundOn('data', NODE_2);
    // First attempt: no other node was ever selected or asked to create it, nothing failed.
    expect((await s.claim('data')).metadata?.annotations?.[SELECTED_NODE]).to.equal(NODE_2);
    for (const n of [NODE_1, NODE_3]) expect(s.stack.node(n).driver.createVolumeRequests().filter((r) => r.name === pv.metadata?.name), n).to.deep.equal([]);
    expect(await eventsAbout(s.admin, s.ns, 'PersistentVolumeClaim', 'data', 'ProvisioningFailed')).to.deep.equal([]);
  });
});
