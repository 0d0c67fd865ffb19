import { expect } from 'chai';
import { Resources, retryOnConflict } from '@topovol/shared';
import type { Node, PersistentVolume, Pod } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import { claim, eventFor, failProvisioning, HOSTNAME, pod, RunningRollback, selectNode } from './rollback-harness.js';
import type { RunningRollback as Loop } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';

/**
 * A pod pinned to node a by an unused provisioned volume (c1), whose sibling c2 failed there, and
 * whose third claim c3 is bound to an administrator's volume allowing nodes a and b: b is the only
 * place the pod could go, so a rollback is worth making only while b can take it. Against the real
 * API server and kube-controller-manager's binder and protection controllers.
 */
describe('rollback: a static sibling volume whose only other node is cordoned', function () {
  this.timeout(180_000);
  const f = new RollbackFixture();
  let loop: Loop;
  before(async () => {
    await f.startSuite();
    loop = await RunningRollback.start();
  });
  after(async () => {
    await loop?.stop();
    await f.stopSuite();
  });
  beforeEach(() => f.startTest('rbh-'));
  afterEach(async () => {
    await f.stopTest();
    // The administrator's volume, Released by then (Retain): cluster-wide, so not left to other suites.
    await f.admin.delete(Resources.persistentVolumes, f.name('static')).catch(() => undefined);
  });

  const cordon = (node: string, unschedulable: boolean): Promise<void> =>
    retryOnConflict(async () => {
      const n = await f.admin.get<Node>(Resources.nodes, f.name(node));
      n.spec = { ...n.spec, unschedulable };
      await f.admin.replace(Resources.nodes, n);
    });

  /** c3 bound to a volume an administrator made for nodes a and b (not provisioned, never marked). */
  const staticC3 = async (): Promise<void> => {
    const c3 = await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c3', f.cls));
    await f.admin.create<PersistentVolume>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: f.name('static') },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: f.cls,
        claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: f.ns, name: 'c3', uid: c3.metadata?.uid },
        csi: { driver: 'rollback.test.topovol.io', volumeHandle: `handle-${f.name('static')}` },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: HOSTNAME, operator: 'In', values: [f.name('a'), f.name('b')] }] }] } },
      },
    });
    await eventually(async () => expect((await f.claim('c3')).status?.phase).to.equal('Bound'), 60_000);
  };

  it('is refused while node b is cordoned, and made once b is uncordoned (the node change alone brings the pod back)', async function () {
    await cordon('b', true);
    await staticC3();
    for (const c of ['c1', 'c2']) await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, c, f.cls));
    const p = await f.admin.create<Pod>(Resources.pods, pod(f.ns, 'p', ['c1', 'c2', 'c3']));
    for (const c of ['c1', 'c2']) await selectNode(f.admin, f.ns, c, f.name('a'));
    const c1 = await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    const refused = await eventFor(f.admin, p, 'ProvisioningRollbackRefused');
    expect(refused.message).to.match(/claim c3 is bound to volume .*static.*no other node the pod can be placed on now/);
    expect((await f.claim('c1')).metadata?.uid, 'c1 kept while b is cordoned').to.equal(c1.metadata?.uid);

    // Uncordoned: nothing of the pod, its claims or its volumes changes; the node's update alone
    // must bring the pod back to the loop.
    await cordon('b', false);
    await eventually(async () => expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
    const done = await eventFor(f.admin, p, 'ProvisioningRollback');
    expect(done.message).to.match(/claim c2 .*ResourceExhausted/);
  });
});
