import { expect } from 'chai';
import { logger } from '@topovol/shared';
import type { KubeClient, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { FakeEvents } from '@topovol/testing';
import { advanceRollback } from '../../src/rollback/advance-rollback.js';
import { NOMINATED_RECHECK_MS } from '../../src/rollback/intent/decide-claim-delete.js';
import { decideMark } from '../../src/rollback/decide-mark.js';
import { decideRollback } from '../../src/rollback/decide-rollback.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { newRollback } from '../../src/rollback/intent/new-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { podMayHaveRun } from '../../src/rollback/usage-evidence.js';
import { observeProvisioning } from '../../src/rollback/provisioning-observation.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { decidedClaim, rollbackDecision, rollbackRecord, thePod } from './rollback-record-fixture.js';
import { NOW, claim, failed, iso, node, pod, pv, record, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// Edges of the rollback loop's decisions that a mutation run found no unit test held (each case
// fails with the guard it describes removed or inverted): the ones that could lose a claim or roll
// back a volume that may hold data first, then those that would roll back without need.

const unusedOnA = pv('v1', 'c1', { usage: 'unused', forNode: 'a' });
const base: W = { pvs: [unusedOnA], claims: [claim('c1', { volume: 'v1' }), claim('c2')], nodes: [node('a'), node('b')], failures: { c2: [failed('rpc error: code = ResourceExhausted')] }, observed: { 'uid-c1': seen() } };
const P = pod('p', ['c1', 'c2']);
const decide = (w: W, p: Pod = P): string => {
  const d = decideRollback(p, world({ ...w, pods: [p, ...(w.pods ?? [])] }), w.stuckSince, w.readySince);
  return d.kind === 'rollback' ? `rollback ${d.attempt}` : d.kind;
};

describe('rollback decisions: edges a mutation run found untested (decideRollback)', function () {
  it('a pod being deleted → none', function () {
    expect(decide(base, { ...P, metadata: { ...P.metadata, deletionTimestamp: iso(NOW) } })).to.equal('none');
  });
  it('provisioned-for annotations but the usage label removed (opted out) → none', function () {
    expect(decide({ ...base, pvs: [pv('v1', 'c1', { forNode: 'a' })] })).to.equal('none');
  });
  it('volume bound to an earlier claim of the name (claimRef uid stale), its provisioning observed → not rolled back', function () {
    const v = pv('v1', 'c1', { usage: 'unused', forNode: 'a' });
    v.spec!.claimRef!.uid = 'uid-old';
    expect(decide({ ...base, pvs: [v], observed: { 'uid-c1': seen(), 'uid-old': seen() } })).to.equal('none');
  });
  it('a bare pod whose uid a deleted pod named as its controller → refuse', function () {
    const p2 = pod('p2', ['c1', 'c2']);
    expect(decide({ ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'uid-p2' })] }, p2)).to.equal('refuse');
  });
  it('notBefore is the last rollback\'s evidence time, not its creation: a failure between them counts → rollback 2', function () {
    const r = record('uid-p', 1, NOW - 60_000);
    r.spec.evidenceTime = iso(NOW - 120_000);
    expect(decide({ ...base, failures: { c2: [failed('ResourceExhausted', NOW - 90_000)] }, rollbacks: [r] })).to.equal('rollback 2');
  });
  it('the very failure the last rollback rested on (same time) → none', function () {
    const r = record('uid-p', 1, NOW - 60_000);
    expect(decide({ ...base, failures: { c2: [failed('ResourceExhausted', Date.parse(r.spec.evidenceTime!))] }, rollbacks: [r] })).to.equal('none');
  });
  it('a sibling that failed once and is bound now → none', function () {
    expect(decide({ ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { volume: 'v2', selected: 'a' })] })).to.equal('none');
  });
  it('a sibling exhausted on node b (re-selected), not on a → none', function () {
    expect(decide({ ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })] })).to.equal('none');
  });
  it('a sibling with a transient failure (not ResourceExhausted) on a → none', function () {
    expect(decide({ ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'a' })], failures: { c2: [failed('rpc error: code = Internal desc = timeout')] } })).to.equal('none');
  });
  it('the scheduler\'s node-affinity report older than the last rollback → none', function () {
    const p = pod('p', ['c1']);
    const u: Pod = { ...p, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: "0/2 nodes are available: 1 Insufficient memory, 1 node(s) didn't match PersistentVolume's node affinity.", lastTransitionTime: iso(NOW - 120_000) }] } };
    expect(decide({ ...base, failures: {}, rollbacks: [record('uid-p', 1, NOW - 60_000)] }, u)).to.equal('none');
  });
  it('a usage label other than used/unused ("Used") is no mark → none', function () {
    expect(decide({ ...base, pvs: [pv('v1', 'c1', { usage: 'Used', forNode: 'a' })] })).to.equal('none');
  });
});

describe('rollback decisions: edges a mutation run found untested (decideMark, observeProvisioning)', function () {
  it('a Pending pod whose init container has terminated (ran to completion) may have run', function () {
    const p = pod('p', ['c']);
    p.status = { phase: 'Pending', initContainerStatuses: [{ name: 'init', image: 'x', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } }] };
    expect(podMayHaveRun(p)).to.equal(true);
  });
  it('a volume being deleted is not marked', function () {
    const v = pv('v', 'c');
    v.metadata = { ...v.metadata, deletionTimestamp: iso(NOW) };
    expect(decideMark(v, world({ claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'])], observed: { 'uid-c': seen() } })).kind).to.equal('none');
  });
  it('the cached claim of the name is a newer one (another uid) → none', function () {
    const c = { ...claim('c', { volume: 'v', selected: 'a' }) };
    c.metadata = { ...c.metadata, uid: 'uid-c-new' };
    expect(decideMark(pv('v', 'c'), world({ claims: [c], pods: [pod('p', ['c'])], observed: { 'uid-c': seen() } })).kind).to.equal('none');
  });
  const pending = claim('c', { selected: 'a' });
  const cases: [string, PersistentVolumeClaim, Pod[]][] = [
    ['two pods', pending, [pod('p', ['c']), pod('q', ['c'])]],
    ['pod scheduled', pending, [pod('p', ['c'], { nodeName: 'a' })]],
    ['claim bound', claim('c', { selected: 'a', volume: 'v' }), [pod('p', ['c'])]],
    ['pod terminating', pending, [{ ...pod('p', ['c']), metadata: { ...pod('p', ['c']).metadata, deletionTimestamp: iso(NOW) } }]],
    ['claim terminating', { ...pending, metadata: { ...pending.metadata, deletionTimestamp: iso(NOW) } }, [pod('p', ['c'])]],
  ];
  for (const [name, c, pods] of cases) it(`${name} → not observed`, function () {
    expect(observeProvisioning(c, world({ claims: [c], pods }))).to.equal(undefined);
  });
  it('observes the one unscheduled pod of a Pending claim with a selected node', function () {
    expect(observeProvisioning(pending, world({ claims: [pending], pods: [pod('p', ['c'])] }))).to.deep.equal({ node: 'a', podUid: 'uid-p', workloadUid: 'uid-p' });
  });
});

/** A duck-typed actuator that records what it is asked to do. */
function fakeActuator(fence: 'fenced' | 'gone' = 'fenced') {
  const calls: string[] = [];
  const setClaim = (r: ProvisioningRollback, name: string, state: string): Promise<ProvisioningRollback> => {
    calls.push(`set ${name} ${state}`);
    return Promise.resolve({ ...r, status: { ...r.status, claims: [...(r.status?.claims ?? []).filter((c) => c.name !== name), { name, state: state as never }] } });
  };
  const a = {
    announce: (r: ProvisioningRollback) => Promise.resolve(r),
    setClaim,
    fenceClaim: () => (calls.push('fence'), Promise.resolve(fence)),
    deleteClaim: () => (calls.push('delete'), Promise.resolve('deleted' as const)),
    createClaim: () => (calls.push('create'), Promise.resolve({ uid: 'uid-new' })),
    finish: () => (calls.push('finish'), Promise.resolve()),
    reportAborted: () => void calls.push('aborted'),
    reportRaced: () => void calls.push('raced'),
    reportAdopted: () => void calls.push('adopted'),
    reportAbandoned: () => void calls.push('abandoned'),
    holdReclaim: () => (calls.push('hold'), Promise.resolve('held' as const)),
    settleVolume: (_r: unknown, _c: unknown, plan: { kind: string }) => (plan.kind === 'none' ? undefined : calls.push(`settle ${plan.kind}`), Promise.resolve('settled' as const)),
  };
  return { calls, actuator: a as unknown as RollbackActuator };
}
const withStates = (r: ProvisioningRollback, claims: { name: string; state: string }[]): ProvisioningRollback => ({ ...r, status: { conditions: [{ type: 'Started', status: 'True', lastTransitionTime: iso(NOW), reason: 'Announced', message: '' }], claims: claims as never } });
const reads = (claimOf: (n: string) => PersistentVolumeClaim | undefined, pods: Pod[]) => ({
  claim: (_: string, n: string) => Promise.resolve(claimOf(n)),
  pods: () => Promise.resolve(pods),
  volumeUse: () => Promise.resolve(undefined),
  volume: () => Promise.resolve(undefined),
  attached: () => Promise.resolve(undefined),
  undeliveredPodUse: () => Promise.resolve(undefined),
  recreateCheck: () => Promise.resolve({ finalizers: [] }),
  namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
  livePod(_ns: string, name: string, uid: string) {
    // The server's pod of that name and uid: one of the pods listed.
    return this.pods().then((ps: Pod[]) => ps.find((p) => p.metadata?.name === name && p.metadata?.uid === uid));
  },
});

describe('rollback decisions: edges a mutation run found untested (advanceRollback, the kept-by fence)', function () {
  it('the claim gone when it was to be kept (our delete landed first) → recorded Deleted (re-created later), not Kept', async function () {
    const r = withStates(rollbackRecord(), [{ name: 'c', state: 'Deleting' }]);
    const { calls, actuator } = fakeActuator('gone');
    await advanceRollback({ actuator, claimWatch: new DeletedClaimWatch(), reads: reads(() => decidedClaim(), []) }, r, decideIntent(r, () => undefined));
    expect(calls).to.deep.equal(['fence', 'set c Deleted']);
  });
  // The replay and the hold take seconds after the first check: kube-scheduler may begin binding
  // the pod meanwhile (its nomination, KEP-5278). The pod is read once more before the delete.
  it('the pod nominated between the first check and the delete: no delete sent, the claim stays Deleting and says why; the next look deletes once the nomination clears', async function () {
    // Recorded just now (the wait counts from the record's creation, by this process's clock).
    const recorded = rollbackRecord();
    const r = withStates({ ...recorded, metadata: { ...recorded.metadata, creationTimestamp: new Date().toISOString() } }, [{ name: 'c', state: 'Deleting' }]);
    const { calls, actuator } = fakeActuator();
    let nominated = false;
    const server = reads(() => decidedClaim(), [thePod]);
    const deps = {
      actuator,
      claimWatch: new DeletedClaimWatch(),
      reads: { ...server, livePod: () => Promise.resolve(nominated ? { ...thePod, status: { ...thePod.status, nominatedNodeName: 'a' } } : thePod) },
      beforeClaimDelete: () => Promise.resolve(),
    };
    // Nominated while the volume's use is checked (the replay of pod events takes seconds).
    const checking = { ...deps.reads, volumeUse: () => ((nominated = true), Promise.resolve(undefined)) };
    const waited = await advanceRollback({ ...deps, reads: checking }, r, decideIntent(r, () => undefined));
    expect(waited).to.be.within(1, NOMINATED_RECHECK_MS);
    expect(calls).to.not.include('delete');
    expect(calls.at(-1)).to.equal('set c Deleting');
    nominated = false;
    await advanceRollback(deps, r, decideIntent(r, () => undefined));
    expect(calls).to.include('delete');
  });
  it('once a claim is Kept, no later claim of the rollback is deleted', async function () {
    const c2 = { ...decidedClaim(), metadata: { ...decidedClaim().metadata, name: 'c2', uid: 'uid-c2' }, spec: { ...decidedClaim().spec, volumeName: 'v2' } };
    const r = withStates(newRollback(thePod, [...rollbackDecision().pinned, { claim: c2, volume: pv('v2', 'c2', { usage: 'unused', forNode: 'a' }), node: 'a' }], 'x', 1, NOW), []);
    const changed = { ...decidedClaim(), metadata: { ...decidedClaim().metadata, resourceVersion: '9', labels: { app: 'other' } } };
    const { calls, actuator } = fakeActuator();
    await advanceRollback({ actuator, claimWatch: new DeletedClaimWatch(), reads: reads((n) => (n === 'c' ? changed : c2), [thePod]) }, r, decideIntent(r, () => undefined));
    expect(calls).to.not.include('delete');
    expect(calls.filter((c) => c.startsWith('set c2'))).to.deep.equal([]);
  });
  it('a claim of the name with another uid found while Deleting → recorded Deleted, no delete sent', async function () {
    const r = withStates(rollbackRecord(), [{ name: 'c', state: 'Deleting' }]);
    const other = { ...decidedClaim(), metadata: { ...decidedClaim().metadata, uid: 'uid-other' } };
    const { calls, actuator } = fakeActuator();
    await advanceRollback({ actuator, claimWatch: new DeletedClaimWatch(), reads: reads(() => other, [thePod]) }, r, decideIntent(r, () => undefined));
    expect(calls).to.deep.equal(['set c Deleted']);
  });
  it('noteRecreated, but the server still has the old claim terminating → wait, nothing recorded', async function () {
    const r = withStates(rollbackRecord(), [{ name: 'c', state: 'Deleted' }]);
    // Deleted just now (advanceRollback reads this clock): looked at again in a second.
    const terminating = { ...decidedClaim(), metadata: { ...decidedClaim().metadata, deletionTimestamp: new Date().toISOString() } };
    const { calls, actuator } = fakeActuator();
    const c = r.spec.claims[0]!;
    const wait = await advanceRollback({ actuator, claimWatch: new DeletedClaimWatch(), reads: reads(() => terminating, []) }, r, [{ kind: 'noteRecreated', claim: c, uid: 'uid-stale' }]);
    expect(wait).to.equal(1000);
    expect(calls).to.deep.equal([]);
  });
  it('a fence the server answers with an unchanged resourceVersion (a webhook dropped the annotation) is an error, not a fence', async function () {
    const client = { patch: () => Promise.resolve({ metadata: { uid: 'uid-c', resourceVersion: '5' } }) } as unknown as KubeClient;
    const actuator = new RollbackActuator({ client, events: new FakeEvents(), log: logger(), dryRun: false });
    const r = rollbackRecord();
    const err = await actuator.fenceClaim(r, r.spec.claims[0]!, '5').then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
  });
});
