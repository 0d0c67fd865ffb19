import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeObject, PersistentVolume, ResourceType } from '@topovol/shared';
import { createStoryPod, eventsAbout, reportVolumesInUse, staleCapacity, STORY_CLAIMS, STORY_POD, unschedulable, volumeTopology } from '@topovol/testing';
import type { StaleCapacityStory } from '@topovol/testing';
import { NODE_1, NODE_2, NODE_KEY } from './e2e-stack.js';
import { Scenario } from './scenario.js';

const PROVISIONING_ROLLBACKS: ResourceType = { group: 'topovol.io', version: 'v1alpha1', plural: 'provisioningrollbacks', kind: 'ProvisioningRollback', namespaced: false };
const USAGE = 'rollback.topovol.io/usage';

interface ProvisioningRollback extends KubeObject {
  status?: { phase?: string };
}

// kubernetes/kubernetes#94217: a pod with two delayed-binding claims is sent to a node whose
// published capacity is stale; the first claim is provisioned there, the second fails
// (ResourceExhausted) and external-provisioner asks for rescheduling, but the first volume now pins
// the pod to the full node. Topovol's rollback loop deletes and re-creates the claim whose volume was
// provisioned for the pod and never used; the scheduler then places the pod where both fit. Its
// safety twin: once the node reports that volume in use, nothing is rolled back (docs/rollback.md).
describe('provisioning rollback (kubernetes #94217) on the real stack', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-rollback-');
  const story = (): StaleCapacityStory => ({ ns: s.ns, cls: s.name('csi'), full: NODE_1, roomy: NODE_2 });

  async function volumesOn(node: string): Promise<PersistentVolume[]> {
    const all = (await s.admin.list<PersistentVolume>(Resources.persistentVolumes)).items;
    return all.filter((v) => v.spec?.storageClassName === story().cls && volumeTopology(v, NODE_KEY) === node);
  }

  it('recovers: the unused volume on the full node is rolled back, the pod moves and both claims are provisioned where they fit', async function () {
    await staleCapacity(s.stack, story());
    await createStoryPod(s.stack, story());
    // Up to three rollbacks (see below), each after the workload's backoff (30 s, then 60 s): the
    // demo's 180 s per step, not the default wait.
    expect(await s.scheduled(STORY_POD, 180_000)).to.equal(NODE_2);
    for (const c of STORY_CLAIMS) await s.boundOn(c, NODE_2);
    // The story happened: node 1 created one volume and refused the other.
    const failed = (await Promise.all(STORY_CLAIMS.map((c) => eventsAbout(s.admin, s.ns, 'PersistentVolumeClaim', c, 'ProvisioningFailed')))).flat();
    expect(failed.map((e) => e.message).join('\n')).to.contain('ResourceExhausted');
    const pod = await s.pod(STORY_POD);
    // The Events a user reads with kubectl describe, and the record of the rollback.
    await s.until('the rollback told in Events', async () => {
      for (const reason of ['ProvisioningRollback', 'ProvisioningRollbackCompleted']) {
        expect(await eventsAbout(s.admin, s.ns, 'Pod', STORY_POD, reason), reason).to.not.deep.equal([]);
      }
      const recreated = (await Promise.all(STORY_CLAIMS.map((c) => eventsAbout(s.admin, s.ns, 'PersistentVolumeClaim', c, 'ClaimRecreated')))).flat();
      expect(recreated, 'ClaimRecreated').to.have.length.at.least(1);
      // Usually one record; a second when the scheduler retries before node 1's figure is refreshed
      // (the capacity loop coalesces refreshes of an item within --capacity-min-refresh-interval),
      // under the per-workload cap either way. Each is Completed a reconcile after its claims are
      // back, which may come after the pod was bound elsewhere.
      const records = (await s.admin.list<ProvisioningRollback>(PROVISIONING_ROLLBACKS, { labelSelector: `rollback.topovol.io/pod-uid=${pod.metadata!.uid!}` })).items;
      expect(records.map((r) => r.status?.phase)).to.have.length.within(1, 3).and.satisfy((p: string[]) => p.every((x) => x === 'Completed'));
    });
    // The rolled-back volume is deleted by node 1's external-provisioner (reclaim policy Delete).
    await s.until('the volume on node 1 deleted', async () => {
      expect(await volumesOn(NODE_1)).to.deep.equal([]);
      expect(s.stack.node(NODE_1).driver.volumes().filter((v) => v.pool === story().cls)).to.deep.equal([]);
    });
    expect(s.stack.node(NODE_1).driver.deleteVolumeRequests()).to.have.length.at.least(1);
  });

  it('safety twin: a volume the node reports in use is never rolled back; the pod stays Pending and the Warning says why', async function () {
    await staleCapacity(s.stack, story());
    // Node 1's first CreateVolume goes through; the others wait until the evidence of use is in.
    const driver = s.stack.node(NODE_1).driver;
    let release = (): void => undefined;
    driver.injectFailure('CreateVolume', { delayMs: 0, times: 1 });
    driver.injectFailure('CreateVolume', { until: new Promise<void>((r) => (release = r)) });
    try {
      await createStoryPod(s.stack, story());
      const [used] = await s.until('a volume provisioned on node 1', async () => {
        const v = (await volumesOn(NODE_1)).filter((x) => x.status?.phase === 'Bound');
        expect(v).to.have.length(1);
        return v;
      });
      // What the kubelet reports once it has mounted the volume: it may hold data from now on.
      await reportVolumesInUse(s.admin, NODE_1, [used!]);
      await s.until('the volume marked used', async () => {
        const v = await s.admin.get<PersistentVolume>(Resources.persistentVolumes, used!.metadata!.name!);
        expect(v.metadata?.labels?.[USAGE]).to.equal('used');
      });
      release();
      const usedClaim = used!.spec!.claimRef!;
      // csi-provisioner backs the held claim off (1 s doubling to 5 min); a change to the claim
      // queues it again at once, so its next CreateVolume does not wait out a long step.
      for (const held of STORY_CLAIMS.filter((c) => c !== usedClaim.name)) {
        await s.admin.patch(Resources.persistentVolumeClaims, held, s.ns, 'merge', { metadata: { labels: { 'test.topovol.dev/released': 'yes' } } });
      }
      const refused = await s.until('the rollback refused', async () => {
        const [e] = await eventsAbout(s.admin, s.ns, 'Pod', STORY_POD, 'ProvisioningRollbackRefused');
        if (!e) throw new Error('no ProvisioningRollbackRefused Event');
        return e;
      });
      expect(refused.type).to.equal('Warning');
      expect(refused.message).to.match(/^not rolling back provisioning: /);
      // Nothing touched: the claim is the same object, still bound to the same volume on node 1.
      const c = await s.claim(usedClaim.name!);
      expect(c.metadata?.uid).to.equal(usedClaim.uid);
      expect(c.spec?.volumeName).to.equal(used!.metadata!.name);
      expect((await volumesOn(NODE_1)).map((v) => v.metadata?.name)).to.deep.equal([used!.metadata!.name]);
      // The pod stays Pending: its volume allows node 1 only, which has no room for the other claim.
      const why = await s.until('the pod reported unschedulable', async () => {
        const w = unschedulable(await s.pod(STORY_POD));
        expect(w?.message).to.contain("2 node(s) didn't match PersistentVolume's node affinity");
        return w!;
      });
      expect(why.reason).to.equal('Unschedulable');
      const pod = await s.pod(STORY_POD);
      expect(pod.spec?.nodeName).to.equal(undefined);
      expect((await s.admin.list<ProvisioningRollback>(PROVISIONING_ROLLBACKS, { labelSelector: `rollback.topovol.io/pod-uid=${pod.metadata!.uid!}` })).items).to.deep.equal([]);
      for (const c2 of STORY_CLAIMS) expect(await eventsAbout(s.admin, s.ns, 'PersistentVolumeClaim', c2, 'ClaimRecreated'), c2).to.deep.equal([]);
    } finally {
      release();
      driver.clearFailures();
      await reportVolumesInUse(s.admin, NODE_1, []);
    }
  });
});
