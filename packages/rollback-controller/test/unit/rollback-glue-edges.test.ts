import { expect } from 'chai';
import { KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { FakeEvents, FakeWrites, metricSum } from '@topovol/testing';
import { claimFromTemplate } from '../../src/rollback/claim-template.js';
import type { RollbackDecision } from '../../src/rollback/decide-rollback.js';
import { NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { MARK_REFUSED_RETRY_MS, writeMark } from '../../src/rollback/mark-actuator.js';
import { ANN_KEPT_BY, ANN_PROVISIONED_FOR_NODE } from '../../src/rollback/marks.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { RollbackReconciler, STALE_RECORD_RETRY_MS } from '../../src/rollback/reconcile-rollback.js';
import type { RollbackGlueDeps } from '../../src/rollback/reconcile-rollback.js';
import { workloadOf } from '../../src/rollback/workload.js';
import { decidedClaim, rollbackDecision, rollbackRecord, thePod } from './rollback-record-fixture.js';
import { NOW, claim, node, pod, pv, record, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// Edges of the rollback loop's writes and its reconcile glue that a mutation run found no unit test
// held (each case fails with the guard it describes removed or inverted): preconditions, dry run,
// records and what is written on claims and volumes. rollback-evidence-edges.test.ts holds the use
// evidence and the server reads.

describe('writes: edges a mutation run found untested (marks, workload, claim template)', function () {
  it('marking used keeps the node a volume was marked provisioned for', async function () {
    const store = new FakeWrites();
    const v = store.seed(Resources.persistentVolumes, { ...pv('v', 'c', { usage: 'unused', forNode: 'a' }), kind: 'PersistentVolume' });
    await writeMark({ client: store, events: new FakeEvents(), log: logger(), dryRun: false }, { kind: 'markUsed', volume: v, because: 'mounted on node b', node: 'b' });
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE]).to.equal('a');
  });

  it("a pod's workload is its controller, not another owner listed first; with none, the pod itself", function () {
    const p = pod('p', []);
    const owners = (controller: boolean) => [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-cm' },
      ...(controller ? [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'uid-rs', controller: true }] : []),
    ];
    expect(workloadOf({ ...p, metadata: { ...p.metadata, ownerReferences: owners(true) } }).uid).to.equal('uid-rs');
    expect(workloadOf({ ...p, metadata: { ...p.metadata, ownerReferences: owners(false) } })).to.deep.equal({ kind: 'Pod', name: 'p', uid: 'uid-p' });
  });

  it("an earlier rollback's fence is not carried into the re-created claim", function () {
    const c = claimFromTemplate({ metadata: { annotations: { [ANN_KEPT_BY]: 'rb-x-1/0a0b0c0d', team: 'db' } }, spec: {} }, 'ns', 'c');
    expect(c.metadata?.annotations).to.deep.equal({ team: 'db' });
  });
});

describe('rollback glue: edges a mutation run found untested (RollbackReconciler)', function () {
  // Node a is cordoned; claim c1's volume there is unused and its provisioning was observed; c2 is
  // undecided (its node selected, nothing heard from the provisioner) unless left out.
  const P = pod('p', ['c1', 'c2']);
  const base: W = {
    pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a' })],
    claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })],
    nodes: [node('a', { unschedulable: true }), node('b')],
    pods: [P],
    observed: { 'uid-c1': seen() },
  };
  function glue(w: W, extra: Partial<Record<'dryRun' | 'client' | 'actuator' | 'record' | 'historyTtlMs' | 'marks', unknown>> = {}) {
    const now = { t: NOW };
    const decided: string[] = [];
    const enqueued: string[] = [];
    const observed: string[] = [];
    const claimOf = (ns: string, n: string) => world(w).claim(ns, n);
    const deps = {
      world: { ...world(w), now: () => now.t },
      pod: () => w.pods?.[0],
      record: () => undefined,
      actuator: { decide: (_p: Pod, d: RollbackDecision) => (decided.push(d.kind === 'rollback' ? `rollback ${d.attempt}` : d.kind), Promise.resolve()) },
      reads: {
        namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
        livePod(_ns: string, name: string, uid: string) {
    // The server's pod of that name and uid: one of the pods listed.
    return this.pods().then((ps: Pod[]) => ps.find((p) => p.metadata?.name === name && p.metadata?.uid === uid));
  },
        claim: (ns: string, n: string) => Promise.resolve(claimOf(ns, n)),
        volumeUse: () => Promise.resolve(undefined),
        pods: () => Promise.resolve(w.pods ?? []),
        recreateCheck: () => Promise.resolve({ finalizers: [] }),
      },
      marks: { client: { patch: () => Promise.resolve({}) }, events: new FakeEvents(), log: logger(), dryRun: false },
      log: logger(),
      dryRun: false,
      historyTtlMs: 0,
      observe: (c: PersistentVolumeClaim) => void observed.push(c.metadata?.name ?? ''),
      enqueueRecord: (name: string) => void enqueued.push(name),
      ...extra,
    } as unknown as RollbackGlueDeps;
    return { r: new RollbackReconciler(deps), now, decided, enqueued, observed };
  }

  it("an unfinished rollback of the pod's workload is advanced; nothing new is decided meanwhile", async function () {
    const running = { ...record('uid-p', 1, NOW - 3_600_000), status: { phase: 'Deleting' as const } };
    const { r, decided, enqueued } = glue({ ...base, claims: [claim('c1', { volume: 'v1' })], pods: [pod('p', ['c1'])], rollbacks: [running] });
    await r.pod('ns', 'p');
    expect(enqueued).to.deep.equal([running.metadata!.name]);
    expect(decided).to.deep.equal([]);
  });

  it('a finished rollback in the history is no reason to wait: the next is decided', async function () {
    const done = record('uid-p', 1, NOW - 3_600_000);
    const { r, now, decided, enqueued } = glue({ ...base, claims: [claim('c1', { volume: 'v1' })], pods: [pod('p', ['c1'])], rollbacks: [done] });
    expect(await r.pod('ns', 'p'), "the node's state alone: the dwell").to.equal(NODE_STATE_DWELL_MS);
    now.t += NODE_STATE_DWELL_MS;
    await r.pod('ns', 'p');
    expect(enqueued).to.deep.equal([]);
    expect(decided).to.deep.equal(['wait', 'rollback 2']);
  });

  it('a backoff wait is not a grace wait: once the backoff is over, the grace for an undecided claim runs out', async function () {
    // Rollback 1 was 10 s ago: 20 s of its 30 s backoff are left.
    const { r, now, decided } = glue({ ...base, rollbacks: [record('uid-p', 1, NOW - 10_000)] });
    expect(await r.pod('ns', 'p'), 'backing off').to.equal(20_000);
    now.t += 21_000;
    expect(await r.pod('ns', 'p'), 'the grace, from now').to.equal(60_000);
    now.t += 61_000;
    expect(await r.pod('ns', 'p'), "then the node's state alone: the dwell").to.equal(NODE_STATE_DWELL_MS);
    now.t += NODE_STATE_DWELL_MS;
    await r.pod('ns', 'p');
    expect(decided.at(-1)).to.equal('rollback 2');
  });

  it('a pod is forgotten as waiting once its rollback is recorded (the next one gets a grace of its own)', async function () {
    const { r, now } = glue(base);
    await r.pod('ns', 'p');
    expect(r.waitingPods()).to.equal(1);
    now.t += 61_000;
    await r.pod('ns', 'p');
    expect(r.waitingPods(), 'dwelling').to.equal(1);
    now.t += NODE_STATE_DWELL_MS;
    await r.pod('ns', 'p');
    expect(r.waitingPods()).to.equal(0);
  });

  it("the dwell on a node's state counts only while the pod stays ready: uncordoned and cordoned again, it starts over", async function () {
    const w: W = { ...base, claims: [claim('c1', { volume: 'v1' })], pods: [pod('p', ['c1'])] };
    const { r, now, decided } = glue(w);
    expect(await r.pod('ns', 'p')).to.equal(NODE_STATE_DWELL_MS);
    now.t += 10_000;
    expect(await r.pod('ns', 'p'), 'the rest').to.equal(NODE_STATE_DWELL_MS - 10_000);
    w.nodes = [node('a'), node('b')];
    await r.pod('ns', 'p');
    w.nodes = base.nodes;
    now.t += 5_000;
    expect(await r.pod('ns', 'p'), 'from now again').to.equal(NODE_STATE_DWELL_MS);
    now.t += NODE_STATE_DWELL_MS;
    await r.pod('ns', 'p');
    expect(decided).to.deep.equal(['wait', 'wait', 'none', 'wait', 'rollback 1']);
  });

  it('a pod deleted while it dwells: its dwell is forgotten (a pod of that uid is never seen again, and the memory is bounded)', async function () {
    const w: W = { ...base, claims: [claim('c1', { volume: 'v1' })], pods: [pod('p', ['c1'])] };
    const { r, now } = glue(w);
    expect(await r.pod('ns', 'p')).to.equal(NODE_STATE_DWELL_MS);
    r.forgetPod('uid-p');
    now.t += 10_000;
    expect(await r.pod('ns', 'p'), 'from now again').to.equal(NODE_STATE_DWELL_MS);
  });

  it('a pod is forgotten as waiting once it is no longer stuck', async function () {
    const w: W = { ...base };
    const { r } = glue(w);
    await r.pod('ns', 'p');
    expect(r.waitingPods()).to.equal(1);
    w.nodes = [node('a'), node('b')];
    await r.pod('ns', 'p');
    expect(r.waitingPods()).to.equal(0);
  });

  it("a volume's look observes its claim's provisioning too (the volume's event may come first)", async function () {
    const { r, observed } = glue(base);
    await r.volume('v1');
    expect(observed).to.deep.equal(['c1']);
  });

  it('a volume whose mark the API server refuses is looked at again a minute later, not after the work queue\'s doubling backoff', async function () {
    const refusing = { patch: () => Promise.reject(new KubeApiError(403, { reason: 'Forbidden', message: 'denied' })) };
    // v1's claim is used by a pod placed on a node: the loop marks v1 used, and that is refused.
    const placed: W = { ...base, pods: [{ ...P, spec: { ...P.spec!, nodeName: 'a' } }] };
    const { r } = glue(placed, { marks: { client: refusing, events: new FakeEvents(), log: logger(), dryRun: false } });
    expect(await r.volume('v1')).to.equal(MARK_REFUSED_RETRY_MS);
  });

  it('a volume no longer cached is nothing to do, not an error', async function () {
    const { r } = glue(base);
    expect(await r.volume('gone')).to.equal(undefined);
  });

  it("an expired record's delete carries its uid: a record of that name made since is left alone", async function () {
    const store = new FakeWrites();
    const fresh = store.seed(ProvisioningRollbacks, { ...rollbackRecord(), metadata: { ...rollbackRecord().metadata, uid: 'uid-new' } });
    const expired: ProvisioningRollback = { ...fresh, metadata: { ...fresh.metadata, uid: 'uid-old' }, status: { phase: 'Completed', completionTime: '2000-01-01T00:00:00Z' } };
    const { r } = glue(base, { client: store, record: () => expired });
    await r.record(expired.metadata!.name!).catch(() => undefined);
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, fresh.metadata.name!)?.metadata?.uid).to.equal('uid-new');
  });

  it("an expired record's delete carries its resourceVersion: a record changed since the cache showed it finished is kept and decided again", async function () {
    const store = new FakeWrites();
    // On the server the record is in progress (it holds the claims to re-create); the cache lags and
    // still shows an older, finished version of it.
    const current = store.seed(ProvisioningRollbacks, { ...rollbackRecord(), metadata: { ...rollbackRecord().metadata, uid: 'uid-1', resourceVersion: '20' }, status: { phase: 'Deleting' } });
    const cached: ProvisioningRollback = { ...current, metadata: { ...current.metadata, resourceVersion: '10' }, status: { phase: 'Completed', completionTime: '2000-01-01T00:00:00Z' } };
    const { r } = glue(base, { client: store, record: () => cached });
    expect(await r.record(cached.metadata!.name!)).to.equal(STALE_RECORD_RETRY_MS);
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, current.metadata.name!)?.status?.phase).to.equal('Deleting');
  });

  it("an expired record's delete that fails is thrown (retried), not dropped", async function () {
    const unavailable = new KubeApiError(503, { message: 'etcd leader changed' });
    const expired: ProvisioningRollback = { ...rollbackRecord(), status: { phase: 'Completed', completionTime: '2000-01-01T00:00:00Z' } };
    const { r } = glue(base, { client: { delete: () => Promise.reject(unavailable) }, record: () => expired });
    expect(await r.record('x').then(() => 'done', (e: unknown) => e)).to.equal(unavailable);
  });

  it('--dry-run: an unfinished record found is not advanced (nothing written, no claim deleted)', async function () {
    const store = new FakeWrites();
    store.seed(Resources.persistentVolumeClaims, decidedClaim());
    const r0 = store.seed(ProvisioningRollbacks, rollbackRecord());
    const before = store.snapshot();
    const actuator = new RollbackActuator({ client: store, events: new FakeEvents(), log: logger(), dryRun: true });
    const { r } = glue(base, { client: store, actuator, dryRun: true, record: () => r0 });
    await r.record(r0.metadata!.name!);
    expect(store.snapshot()).to.deep.equal(before);
  });

  it('a Conflict is retried as a matter of course, not counted as an error', async function () {
    const conflict = new KubeApiError(409, { kind: 'Status', reason: 'Conflict', message: 'the object has been modified' });
    const { r } = glue(base, { record: () => { throw conflict; } });
    const before = await metricSum('topovol_rollback_rollbacks_total', { result: 'error' });
    await r.record('x').catch(() => undefined);
    expect(await metricSum('topovol_rollback_rollbacks_total', { result: 'error' })).to.equal(before);
  });
});

describe('writes: edges a mutation run found untested (RollbackActuator)', function () {
  let store: FakeWrites;
  let events: FakeEvents;
  const actuator = (client: Pick<KubeClient, 'create' | 'delete' | 'patch' | 'replaceStatus'> = store, dryRun = false) => new RollbackActuator({ client, events, log: logger(), dryRun });
  beforeEach(function () {
    store = new FakeWrites();
    events = new FakeEvents();
  });

  it('a rollback is recorded with the uid of its namespace', async function () {
    await actuator().decide(thePod, rollbackDecision(), 'ns-uid');
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, rollbackRecord().metadata!.name!)?.spec.pod.namespaceUID).to.equal('ns-uid');
  });

  it("a record's create that fails otherwise than AlreadyExists is thrown (retried), not dropped", async function () {
    const unavailable = new KubeApiError(503, { message: 'etcd leader changed' });
    const failing = Object.assign(Object.create(store) as FakeWrites, { create: () => Promise.reject(unavailable) });
    expect(await actuator(failing).decide(thePod, rollbackDecision(), 'ns-uid').then(() => 'done', (e: unknown) => e)).to.equal(unavailable);
  });

  it('--dry-run reports a decision once, however often it is decided again', async function () {
    const before = await metricSum('topovol_rollback_rollbacks_total', { result: 'dry_run' });
    const a = actuator(store, true);
    await a.decide(thePod, rollbackDecision());
    await a.decide(thePod, rollbackDecision());
    expect(await metricSum('topovol_rollback_rollbacks_total', { result: 'dry_run' })).to.equal(before + 1);
  });

  it('the fence is conditional on the resourceVersion checked: a claim written since is not fenced (409)', async function () {
    const r = store.seed(ProvisioningRollbacks, rollbackRecord());
    store.seed(Resources.persistentVolumeClaims, { ...decidedClaim(), metadata: { ...decidedClaim().metadata, resourceVersion: '6' } });
    const err = await actuator().fenceClaim(r, r.spec.claims[0]!, '5').then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(KubeApiError);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.annotations?.[ANN_KEPT_BY]).to.equal(undefined);
  });

  it('a claim abandoned with its namespace puts the rollback in its Recreating phase', async function () {
    const r = store.seed(ProvisioningRollbacks, rollbackRecord());
    expect((await actuator().setClaim(r, 'c', 'Abandoned')).status?.phase).to.equal('Recreating');
  });

  it("the announcement tells of a volume its reclaim policy keeps, and its condition names the record's generation", async function () {
    const rec = rollbackRecord();
    const r = store.seed(ProvisioningRollbacks, { ...rec, metadata: { ...rec.metadata, generation: 3 }, spec: { ...rec.spec, claims: [{ ...rec.spec.claims[0]!, reclaimPolicy: 'Retain' }] } });
    const announced = await actuator().announce(r);
    expect(events.recorded.find((e) => e.kind === 'PersistentVolume')?.message).to.include('kept: its reclaim policy is Retain');
    expect(announced.status?.conditions?.[0]?.observedGeneration).to.equal(3);
  });
});
