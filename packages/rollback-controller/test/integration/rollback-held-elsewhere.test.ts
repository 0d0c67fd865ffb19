import { expect } from 'chai';
import { metricsRegistry, Resources, retryOnConflict } from '@topovol/shared';
import type { Node, PersistentVolume, Pod } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import { claim, createNode, eventFor, failProvisioning, HOSTNAME, pod, RunningRollback, selectNode } from './rollback-harness.js';
import type { RunningRollback as Loop } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';

/**
 * A pod pinned to node a by an unused provisioned volume (c1), whose sibling c2 failed there, and
 * whose third claim c3 is bound to an administrator's volume allowing nodes a and b: b is the only
 * place the pod could go, so a rollback is worth making only while b can take it. Against the real
 * API server and kube-controller-manager's binder and protection controllers.
 */
describe('rollback: a static sibling volume whose only other node cannot take the pod', function () {
  this.timeout(180_000);
  const { f, loop } = suite([], 'rbh-');
  const cordon = (node: string, unschedulable: boolean): Promise<void> => setCordon(f, node, unschedulable);

  const staticC3 = (): Promise<void> => staticVolumeFor(f, 'c3', [f.name('a'), f.name('b')]);

  const relabel = (node: string, labels: Record<string, string>): Promise<void> =>
    retryOnConflict(async () => {
      const n = await f.admin.get<Node>(Resources.nodes, f.name(node));
      n.metadata = { ...n.metadata, labels: { ...n.metadata?.labels, ...labels } };
      await f.admin.replace(Resources.nodes, n);
    });
  const POOL = 'example.com/pool';

  // How node b is kept from the pod, and the node change alone that gives it back: each must bring
  // the refused pod back to the loop (nothing of the pod, its claims or its volumes changes).
  const ways: { name: string; pod?: Partial<NonNullable<Pod['spec']>>; away: () => Promise<void>; back: () => Promise<void> }[] = [
    { name: 'cordoned, then uncordoned', away: () => cordon('b', true), back: () => cordon('b', false) },
    { name: 'not made yet, then made (a node added)', away: () => f.admin.delete(Resources.nodes, f.name('b')).then(() => undefined), back: () => createNode(f.admin, f.name('b')) },
    {
      name: "outside the pod's nodeSelector, then labelled into it",
      pod: { nodeSelector: { [POOL]: 'fast' } },
      away: () => relabel('a', { [POOL]: 'fast' }),
      back: () => relabel('b', { [POOL]: 'fast' }),
    },
  ];
  for (const way of ways) {
    it(`node b ${way.name}: refused while b cannot take the pod, rolled back once it can`, async function () {
      await way.away();
      await staticC3();
      for (const c of ['c1', 'c2']) await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, c, f.cls));
      const base = pod(f.ns, 'p', ['c1', 'c2', 'c3']);
      const p = await f.admin.create<Pod>(Resources.pods, { ...base, spec: { ...base.spec!, ...way.pod } });
      for (const c of ['c1', 'c2']) await selectNode(f.admin, f.ns, c, f.name('a'));
      const c1 = await f.provisionC1OnA(loop());
      await eventually(async () => expect(await f.usage()).to.equal('unused'));
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      const refused = await eventFor(f.admin, p, 'ProvisioningRollbackRefused');
      expect(refused.message).to.match(/claim c3 is bound to volume .*static.*no other node the pod can be placed on now/);
      expect((await f.claim('c1')).metadata?.uid, 'c1 kept while b cannot take the pod').to.equal(c1.metadata?.uid);

      await way.back();
      await eventually(async () => expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
      const done = await eventFor(f.admin, p, 'ProvisioningRollback');
      expect(done.message).to.match(/claim c2 .*ResourceExhausted/);
    });
  }
});

// --dry-run keeps the marks it would write in memory: the node change must bring back the pods of
// those volumes too, or a dry run would report "refused" where a real run rolls back.
describe('rollback --dry-run: a static sibling volume whose only other node is cordoned, then uncordoned', function () {
  this.timeout(180_000);
  const { f, loop } = suite(['--dry-run'], 'rbhd-');

  it('reports the refusal while b is cordoned, and the rollback it would make once b is uncordoned; writes nothing', async function () {
    const setB = (unschedulable: boolean): Promise<void> => setCordon(f, 'b', unschedulable);
    await setB(true);
    await staticVolumeFor(f, 'c3', [f.name('a'), f.name('b')]);
    for (const c of ['c1', 'c2']) await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, c, f.cls));
    await f.admin.create<Pod>(Resources.pods, pod(f.ns, 'p', ['c1', 'c2', 'c3']));
    for (const c of ['c1', 'c2']) await selectNode(f.admin, f.ns, c, f.name('a'));
    const c1 = await f.provisionC1OnA(loop());
    const dry = await rollbacks('dry_run');
    const refusals = await rollbacks('refused');
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    // A dry run records no Event: its decisions are counted and logged.
    await eventually(async () => expect(await rollbacks('refused')).to.be.greaterThan(refusals), 60_000);
    expect(await rollbacks('dry_run')).to.equal(dry);
    await setB(false);
    await eventually(async () => expect(await rollbacks('dry_run')).to.be.greaterThan(dry), 60_000);
    expect((await f.claim('c1')).metadata?.uid, 'nothing written').to.equal(c1.metadata?.uid);
  });
});

async function rollbacks(result: string): Promise<number> {
  const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
  return all.find((m) => m.name === 'topovol_rollback_rollbacks_total')?.values.find((v) => v.labels.result === result)?.value ?? 0;
}

/** The claim `claimName` (made here) bound to a volume an administrator made for `nodes` (not provisioned, never marked). */
async function staticVolumeFor(f: RollbackFixture, claimName: string, nodes: string[]): Promise<void> {
  const c = await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, claimName, f.cls));
  await f.admin.create<PersistentVolume>(Resources.persistentVolumes, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: f.name('static') },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: f.cls,
      claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: f.ns, name: claimName, uid: c.metadata?.uid },
      csi: { driver: 'rollback.test.topovol.io', volumeHandle: `handle-${f.name('static')}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: HOSTNAME, operator: 'In', values: nodes }] }] } },
    },
  });
  await eventually(async () => expect((await f.claim(claimName)).status?.phase).to.equal('Bound'), 60_000);
}

/** A rollback loop started with `args` for the describe calling this, over a fixture of its own; each test's administrator volume removed after it. */
function suite(args: string[], prefix: string): { f: RollbackFixture; loop: () => Loop } {
  const f = new RollbackFixture();
  let running: Loop | undefined;
  before(async () => {
    await f.startSuite();
    running = await RunningRollback.start(args);
  });
  after(async () => {
    await running?.stop();
    await f.stopSuite();
  });
  beforeEach(() => f.startTest(prefix));
  afterEach(async () => {
    await f.stopTest();
    // The administrator's volume, Released by then (Retain): cluster-wide, so not left to other suites.
    await f.admin.delete(Resources.persistentVolumes, f.name('static')).catch(() => undefined);
  });
  return { f, loop: () => running! };
}

function setCordon(f: RollbackFixture, node: string, unschedulable: boolean): Promise<void> {
  return retryOnConflict(async () => {
    const n = await f.admin.get<Node>(Resources.nodes, f.name(node));
    n.spec = { ...n.spec, unschedulable };
    await f.admin.replace(Resources.nodes, n);
  });
}
