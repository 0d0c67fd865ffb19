import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';
import { claim, eventsAbout, podWithClaims, SELECTED_NODE } from '@topovol/testing';
import { DRIVER, NODE_1, NODE_3, NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';

// kubernetes/kubernetes#95767: a pod placed with spec.nodeName never meets the scheduler, so nothing
// pre-binds or selects a node for its delayed-binding claims and upstream's binder leaves them
// Pending while the kubelet waits for them. Topovol's pv-binder acts for that pod's node: it binds
// a local PV there, and selects the node for provisioning so that node's external-provisioner
// creates the volume (docs/divergences.md).
describe('a pod placed with spec.nodeName and delayed-binding claims', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-nodename-');

  it('gets its volumes on its node: a local PV there, and one provisioned there', async function () {
    const local = await s.localClass('local');
    await s.localVolumes(local, 'pv', { [NODE_1]: 1, [NODE_3]: 1 });
    const csi = await s.driverClass('csi', Object.fromEntries(NODES.map((n) => [n, 10n * GiB])));
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'local-data', '1Gi', local));
    await s.create(Resources.persistentVolumeClaims, claim(s.ns, 'data', '2Gi', csi));
    await s.create(Resources.pods, podWithClaims(s.ns, 'app', ['local-data', 'data'], { nodeName: NODE_3 }));

    const localPV = await s.boundOn('local-data', NODE_3);
    expect(localPV.metadata?.name).to.equal(s.name(`pv-${NODE_3}-0`));
    const pv = await s.boundOn('data', NODE_3);
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).to.equal(DRIVER);
    expect(s.stack.node(NODE_3).driver.volumeByName(pv.metadata!.name!)?.capacityBytes).to.equal(2n * GiB);
    expect((await s.claim('data')).metadata?.annotations?.[SELECTED_NODE]).to.equal(NODE_3);
    await s.until('the claim says why its node was selected', async () => {
      const [why] = await eventsAbout(s.admin, s.ns, 'PersistentVolumeClaim', 'data', 'ScheduledWithoutScheduler');
      expect(why?.message).to.equal(`pod app runs on node "${NODE_3}" without the scheduler (spec.nodeName); selected that node for provisioning`);
    });
  });
});
