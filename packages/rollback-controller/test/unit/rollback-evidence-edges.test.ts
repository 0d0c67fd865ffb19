import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { KubeApiError } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, Pod } from '@topovol/shared';
import { ENDED_USE_ABSENT_TTL_MS, ENDED_USE_CLOCK_MARGIN_MS, ENDED_USE_MAX_ABSENT, ENDED_USE_MAX_ABSENT_PER_NAMESPACE, EndedUse } from '../../src/rollback/ended-use.js';
import { ProvisioningObservations } from '../../src/rollback/observations.js';
import { liveReads, missedPodUse } from '../../src/rollback/rollback-server-reads.js';
import { cannotRunOn } from '../../src/rollback/stuck-evidence.js';
import { NOW, claim, failed, iso, node, pod, pv, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// Edges of the rollback loop's use evidence and server reads that a mutation run found no unit test
// held (each case fails with the guard it describes removed or inverted): those that could roll back
// a volume that may hold data or lose a claim first, then those that would roll back without need,
// never roll back, or leak.

const TTL = ENDED_USE_ABSENT_TTL_MS;
const PER_NS = ENDED_USE_MAX_ABSENT_PER_NAMESPACE;
const ALL = ENDED_USE_MAX_ABSENT;

/** An EndedUse whose claims are never cached, and what it tells of evictions. */
function absentUses() {
  const told: { namespaces: string[]; count: number }[] = [];
  const e = new EndedUse(
    () => false,
    (namespaces, count) => void told.push({ namespaces: [...namespaces].sort(), count }),
  );
  return { e, told };
}

describe('use evidence: edges a mutation run found untested (ProvisioningObservations)', function () {
  const observations = () => new ProvisioningObservations(() => true, () => 0);

  it('clear (a gap in the pod watch) drops every observation: none vouches for an unused mark any longer', function () {
    const o = observations();
    o.note('uid-c', 'ns', seen());
    o.clear();
    expect(o.get('uid-c')).to.equal(undefined);
    expect(o.size).to.equal(0);
  });

  it('another pod behind the same node is a change: the observation names the new pod', function () {
    const o = observations();
    o.note('uid-c', 'ns', seen('uid-p1', 'a'));
    expect(o.note('uid-c', 'ns', seen('uid-p2', 'a'))).to.equal('changed');
    expect(o.get('uid-c')).to.deep.equal(seen('uid-p2', 'a'));
  });

  it("a claim's delete drops its observation", function () {
    const o = observations();
    o.note('uid-c', 'ns', seen());
    o.delete('uid-c');
    expect(o.get('uid-c')).to.equal(undefined);
    expect(o.size).to.equal(0);
  });
});

describe('use evidence: edges a mutation run found untested (EndedUse caps)', function () {
  it('a prune that drops nothing tells nothing (each telling forgets observations and relists the claims)', function () {
    const { e, told } = absentUses();
    for (let i = 0; i < 10; i++) e.record(`ns/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told).to.deep.equal([]);
  });

  it('exactly ENDED_USE_MAX_ABSENT_PER_NAMESPACE in a namespace is not past its cap', function () {
    const { e, told } = absentUses();
    for (let i = 0; i < PER_NS; i++) e.record(`ns/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told).to.deep.equal([]);
    expect(e.size).to.equal(PER_NS);
  });

  it('past the namespace cap, its oldest go down to half the cap, not just below it', function () {
    const { e, told } = absentUses();
    for (let i = 0; i <= PER_NS; i++) e.record(`ns/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told).to.deep.equal([{ namespaces: ['ns'], count: PER_NS / 2 + 1 }]);
    expect(e.size).to.equal(PER_NS / 2);
  });

  it('exactly ENDED_USE_MAX_ABSENT in all is not past the cap', function () {
    const { e, told } = absentUses();
    for (let i = 0; i < ALL; i++) e.record(`ns${i % 20}/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told).to.deep.equal([]);
  });

  it('past the cap of all, the oldest go down to half of it', function () {
    const { e, told } = absentUses();
    for (let i = 0; i <= ALL; i++) e.record(`ns${i % 20}/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told.reduce((n, t) => n + t.count, 0)).to.equal(ALL / 2 + 1);
    expect(e.size).to.equal(ALL / 2);
  });

  it("uses already dropped by a namespace's cap do not count towards the cap of all: other namespaces keep theirs", function () {
    const { e, told } = absentUses();
    for (let i = 0; i < 2 * PER_NS; i++) e.record(`flood/c${i}`, 'ran', 0);
    for (let n = 0; n < 9; n++) for (let i = 0; i < PER_NS; i++) e.record(`ns${n}/c${i}`, 'ran', 0);
    e.prune(1);
    expect(told).to.deep.equal([{ namespaces: ['flood'], count: 1.5 * PER_NS }]);
    expect(e.get('ns0/c0')).to.equal('ran');
  });

  it('uses past their TTL go without counting towards the cap: the newer ones stay, nothing is told', function () {
    const { e, told } = absentUses();
    for (let i = 0; i < 600; i++) e.record(`ns/old${i}`, 'ran', 0);
    // The first of these prunes (a minute since the last): nothing has expired yet.
    for (let i = 0; i < 600; i++) e.record(`ns/new${i}`, 'ran', TTL - 30_000);
    e.prune(TTL + 1);
    expect(told).to.deep.equal([]);
    expect(e.size).to.equal(600);
    expect(e.get('ns/new0')).to.equal('ran');
  });

  it('a prune per minute, not per record: the cached check runs a bounded number of times under a steady stream', function () {
    let checks = 0;
    const e = new EndedUse(() => (checks++, true));
    for (let i = 0; i < 2_000; i++) e.record(`ns/c${i % 100}`, 'ran', i * 10);
    // 20 s of records: no prune has come due (the first is a minute after the start).
    expect(checks).to.equal(0);
  });

  it('a namespace whose uses all went is not remembered', function () {
    const e = new EndedUse(() => true);
    e.record('ns-a/c', 'ran', 0, 1);
    e.record('ns-b/c', 'ran', 0, 1);
    // Deleted well after the uses began (past the clock margin).
    e.forget('ns-a/c', 2 + ENDED_USE_CLOCK_MARGIN_MS);
    e.forget('ns-b/c', 2 + ENDED_USE_CLOCK_MARGIN_MS);
    expect(e.size).to.equal(0);
    expect((e as unknown as { perNamespace: Map<string, number> }).perNamespace.size).to.equal(0);
  });
});

describe('use evidence: edges a mutation run found untested (cannotRunOn)', function () {
  const P = pod('p', ['c1', 'c2']);
  const exhaustedOnA: W = { claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'a' })], nodes: [node('a'), node('b')] };
  const verdict = (w: W, p: Pod = P, notBefore = 0) => cannotRunOn('a', p, world(w), notBefore);
  const unschedulable = (message: string, times: { transition?: number; probe?: number }, reason = 'Unschedulable'): Pod => ({
    ...pod('p', ['c1']),
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason, message, lastTransitionTime: times.transition === undefined ? undefined : iso(times.transition), lastProbeTime: times.probe === undefined ? undefined : iso(times.probe) }] },
  });
  const CONFLICT = "0/2 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity.";

  it("a node's refusal is evidence as of now (the node's state), not of some earlier time", function () {
    expect(verdict({ ...exhaustedOnA, nodes: [node('a', { unschedulable: true })] })?.at).to.equal(NOW);
  });

  it('the evidence time of several ResourceExhausted failures is the newest (the next rollback needs newer)', function () {
    const v = verdict({ ...exhaustedOnA, failures: { c2: [failed('ResourceExhausted', NOW - 90_000), failed('ResourceExhausted', NOW - 5_000)] } });
    expect(v?.at).to.equal(NOW - 5_000);
  });

  it("the evidence time is the ResourceExhausted failure's, not a newer transient failure's", function () {
    const v = verdict({ ...exhaustedOnA, failures: { c2: [failed('ResourceExhausted', NOW - 90_000), failed('rpc error: code = Internal', NOW - 5_000)] } });
    expect(v?.at).to.equal(NOW - 90_000);
  });

  it("a core/v1 Event's lastTimestamp (its latest occurrence) wins over its eventTime", function () {
    const repeated: Event = { ...failed('ResourceExhausted', NOW - 5_000), eventTime: iso(NOW - 120_000) };
    expect(verdict({ ...exhaustedOnA, failures: { c2: [repeated] } }, P, NOW - 60_000)?.at).to.equal(NOW - 5_000);
  });

  it('an Event with no time at all is never newer evidence', function () {
    const untimed: Event = { metadata: { name: 'e' }, involvedObject: {}, reason: 'ProvisioningFailed', message: 'ResourceExhausted' };
    expect(verdict({ ...exhaustedOnA, failures: { c2: [untimed] } })).to.equal(undefined);
  });

  it("the scheduler's node-affinity report that the last rollback rested on (same time) is no new evidence", function () {
    expect(verdict({ nodes: [node('a')] }, unschedulable(CONFLICT, { transition: NOW - 60_000 }), NOW - 60_000)).to.equal(undefined);
  });

  it("the scheduler's report counts from its transition, not a later probe of the same condition", function () {
    expect(verdict({ nodes: [node('a')] }, unschedulable(CONFLICT, { transition: NOW - 120_000, probe: NOW - 5_000 }), NOW - 60_000)).to.equal(undefined);
  });

  it('a node-affinity message under another reason (a scheduler error) is not the scheduler reporting the pod unschedulable', function () {
    expect(verdict({ nodes: [node('a')] }, unschedulable(`binding volumes: ${CONFLICT}`, { transition: NOW - 5_000 }, 'SchedulerError'))).to.equal(undefined);
  });

  // kube-scheduler nominates the node it binds the pod to before PreBind (KEP-5278) and keeps the
  // last attempt's condition until the pod is bound: a pod nominated since is being placed.
  const nominated = (p: Pod, to: string): Pod => ({ ...p, status: { ...p.status, nominatedNodeName: to } });
  it("the scheduler's report is no evidence while the pod has a nominated node (the pinned one or another)", function () {
    const reported = unschedulable(CONFLICT, { transition: NOW - 5_000 });
    expect(verdict({ nodes: [node('a')] }, reported)?.why).to.contain('the scheduler reports');
    expect(verdict({ nodes: [node('a')] }, nominated(reported, 'a'))).to.equal(undefined);
    expect(verdict({ nodes: [node('a'), node('b')] }, nominated(reported, 'b'))).to.equal(undefined);
  });

  it("a nominated pod's sibling failing on the pinned node, or the node's own state, is evidence all the same", function () {
    const p = nominated(P, 'a');
    expect(verdict({ ...exhaustedOnA, failures: { c2: [failed('ResourceExhausted', NOW - 5_000)] } }, p)?.why).to.contain('cannot be provisioned on node a');
    expect(verdict({ nodes: [node('a', { unschedulable: true })] }, p)?.at).to.equal(NOW);
  });
});

/**
 * A client for missedPodUse: the list answers `listRv`; each watch streams `events` (or, given one
 * array per watch, its own), then stays open until the client aborts it or the server's watch
 * timeout ends it (`endNow`: at once); `open` may instead fail with an error. `closedBy` says who
 * ended the last watch; `timeouts`, each watch's timeoutSeconds.
 */
function replayServer(listRv: string, events: object[] | object[][], opts: { openError?: Error; endNow?: boolean; volume?: PersistentVolume; attachedTo?: string[] } = {}) {
  const seen = { watches: 0, closedBy: '', timeouts: [] as string[] };
  const client = {
    get: () => (opts.volume ? Promise.resolve(opts.volume) : Promise.reject(new KubeApiError(404, { kind: 'Status', reason: 'NotFound', details: { name: 'v', kind: 'persistentvolumes' } }))),
    request: () => Promise.resolve({ metadata: { resourceVersion: listRv }, items: [] }),
    // The VolumeAttachments the server has: one per volume named.
    list: () => Promise.resolve({ metadata: { resourceVersion: listRv }, items: (opts.attachedTo ?? []).map((pvName, i) => ({ metadata: { name: `csi-${i}` }, spec: { attacher: 'd', nodeName: 'a', source: { persistentVolumeName: pvName } } })) }),
    openStream: (_path: string, query: { timeoutSeconds?: string }, signal: AbortSignal) => {
      const mine = Array.isArray(events[0]) ? ((events as object[][])[seen.watches] ?? []) : (events as object[]);
      seen.watches++;
      seen.closedBy = '';
      seen.timeouts.push(query.timeoutSeconds ?? '');
      if (opts.openError) return Promise.reject(opts.openError);
      const body = new PassThrough();
      body.write(mine.map((e) => `${JSON.stringify(e)}\n`).join(''));
      const serverEnd = (): void => {
        if (seen.closedBy) return;
        seen.closedBy = 'server';
        body.end();
      };
      if (opts.endNow) serverEnd();
      const timer = setTimeout(serverEnd, 2_000);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        if (seen.closedBy) return;
        seen.closedBy = 'client';
        body.destroy();
      });
      return Promise.resolve(body);
    },
  } as unknown as KubeClient;
  return { client, seen };
}
const podEvent = (rv: string, name: string, claimName: string, nodeName?: string): object => ({
  type: 'MODIFIED',
  object: { metadata: { name, namespace: 'ns', resourceVersion: rv }, spec: { nodeName, containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] } },
});
const bookmark = (rv: string): object => ({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } });
const USED = 'pod ns/user using claim data was scheduled to node a';

describe('server reads: edges a mutation run found untested (missedPodUse: the replay before a delete)', function () {
  it('a pod of the claim scheduled while the informer lagged is use', async function () {
    const { client } = replayServer('10', [podEvent('7', 'user', 'data', 'a'), bookmark('11')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.include(USED);
  });

  it('a use seen stays seen: a later event of another, unscheduled pod of the claim does not clear it', async function () {
    const { client } = replayServer('10', [podEvent('7', 'user', 'data', 'a'), podEvent('8', 'pending', 'data'), bookmark('11')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.include(USED);
  });

  it('a use in the very event that reaches the list is use', async function () {
    const { client } = replayServer('10', [podEvent('12', 'user', 'data', 'a')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.include(USED);
  });

  it('a replay that ends before it reaches the list is not proof of no use', async function () {
    const { client } = replayServer('10', [podEvent('7', 'other', 'other-claim', 'a')], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/did not reach/);
  });

  it('a first replay that ends without a bookmark (its watch reached the server too late for one) is followed by a longer one, which reaches the list: no use', async function () {
    const { client, seen } = replayServer('10', [[], [bookmark('11')]], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.equal(undefined);
    expect(seen.timeouts).to.deep.equal(['3', '5']);
  });

  it('a use in the second, longer replay is use', async function () {
    const { client } = replayServer('10', [[podEvent('7', 'other', 'other-claim', 'a')], [podEvent('7', 'other', 'other-claim', 'a'), podEvent('9', 'user', 'data', 'a')]], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.include(USED);
  });

  it('a first replay that reaches the list is the only one', async function () {
    const { client, seen } = replayServer('10', [[bookmark('11')], [podEvent('12', 'user', 'data', 'a')]]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.equal(undefined);
    expect(seen.timeouts).to.deep.equal(['3']);
  });

  it('neither replay reaches the list: cannot tell, and no third is tried', async function () {
    const { client, seen } = replayServer('10', [podEvent('7', 'other', 'other-claim', 'a')], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/did not reach/);
    expect(seen.watches).to.equal(2);
  });

  it('a 410 in the first replay is final: no second replay', async function () {
    const { client, seen } = replayServer('10', [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/too far behind/);
    expect(seen.watches).to.equal(1);
  });

  it('an incomparable resourceVersion (KEP-5504) in the replay does not reach the list', async function () {
    const { client } = replayServer('10', [podEvent('x1', 'other', 'other-claim')], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/did not reach/);
  });

  it('no pod watch yet: cannot tell, and no replay from "" (which would start at now)', async function () {
    const { client } = replayServer('10', [bookmark('11')]);
    expect(await missedPodUse(client, 'ns', 'data', '')).to.match(/has not started/);
  });

  it('an informer that has handled everything up to the list: no use, and no watch opened', async function () {
    const { client, seen } = replayServer('10', [], { endNow: true });
    expect(await missedPodUse(client, 'ns', 'data', '10')).to.equal(undefined);
    expect(seen.watches).to.equal(0);
  });

  it('a bookmark at exactly the list reaches it: no use', async function () {
    const { client } = replayServer('10', [bookmark('10')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.equal(undefined);
  });

  it("another claim's scheduled pod is no use of this one", async function () {
    const { client } = replayServer('10', [podEvent('7', 'other', 'other-claim', 'a'), bookmark('11')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.equal(undefined);
  });

  it("once the replay reached the list the loop ends the watch itself, rather than wait for the server's timeout", async function () {
    const { client, seen } = replayServer('10', [bookmark('11')]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.equal(undefined);
    expect(seen.closedBy).to.equal('client');
  });

  it('an ERROR event (410: the resourceVersion is gone) says the watch is too far behind', async function () {
    const { client } = replayServer('10', [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }]);
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/too far behind/);
  });

  it('a replay line that is no event (null, a bookmark without its object) fails the read: never "no use", never out of the process', async function () {
    // The replay's handler reads e.object as given; such a line threw out of the answer's 'data'
    // listener. Now the read fails, and the reconcile is retried with the volume kept.
    for (const bad of [null, { type: 'BOOKMARK', object: null }, { type: 'ADDED' }]) {
      const { client } = replayServer('10', [bad as object, bookmark('11')]);
      const answer = await missedPodUse(client, 'ns', 'data', '5').then((why) => `answered ${String(why)}`, (err: unknown) => `failed: ${String(err)}`);
      expect(answer, JSON.stringify(bad)).to.contain('failed: Error: watch stream carried a line that is not an event');
    }
  });

  it('a 410 answer to the watch itself says the same, and is not thrown (retried for ever)', async function () {
    const { client } = replayServer('10', [], { openError: new KubeApiError(410, { kind: 'Status', reason: 'Expired', message: 'too old resource version' }) });
    expect(await missedPodUse(client, 'ns', 'data', '5')).to.match(/too far behind/);
  });
});

describe('server reads: edges a mutation run found untested (liveReads.volumeUse)', function () {
  const unused = (): PersistentVolume => ({ ...pv('v', 'data', { usage: 'unused', forNode: 'a' }) });

  it('a volume gone is not provably unused', async function () {
    const { client } = replayServer('10', []);
    expect(await liveReads(client, () => undefined).volumeUse('v')).to.equal('it is gone');
  });

  it('a volume without the usage label is not provably unused', async function () {
    const { client } = replayServer('10', [], { volume: pv('v', 'data') });
    expect(await liveReads(client, () => undefined, () => '10').volumeUse('v')).to.equal('its mark is missing');
  });

  it('the cached evidence counts after an unused mark', async function () {
    const { client } = replayServer('10', [], { volume: unused() });
    expect(await liveReads(client, () => 'node a reports it in status.volumesInUse', () => '10').volumeUse('v')).to.equal('node a reports it in status.volumesInUse');
  });

  it('then a VolumeAttachment the server lists (the watch of attachments may lag behind the failure)', async function () {
    const { client } = replayServer('10', [], { volume: unused(), endNow: true, attachedTo: ['other', 'v'] });
    expect(await liveReads(client, () => undefined, () => '10').volumeUse('v')).to.equal('VolumeAttachment csi-1 exists for it (listed from the server)');
    expect(await liveReads(client, () => undefined).attached('v')).to.equal('VolumeAttachment csi-1 exists for it (listed from the server)');
  });

  it("another volume's attachment is no use of this one", async function () {
    const { client } = replayServer('10', [], { volume: unused(), endNow: true, attachedTo: ['other'] });
    expect(await liveReads(client, () => undefined, () => '10').volumeUse('v')).to.equal(undefined);
    expect(await liveReads(client, () => undefined).attached('v')).to.equal(undefined);
  });

  it('then the pod events the informer has not handled yet', async function () {
    const { client } = replayServer('10', [podEvent('7', 'user', 'data', 'a'), bookmark('11')], { volume: unused() });
    expect(await liveReads(client, () => undefined, () => '5').volumeUse('v')).to.include(USED);
  });

  it("replayed from where the loop's pod informer is: caught up, the volume is provably unused", async function () {
    const { client } = replayServer('10', [], { volume: unused(), endNow: true });
    expect(await liveReads(client, () => undefined, () => '10').volumeUse('v')).to.equal(undefined);
  });

  it('a claimRef without a namespace is bound to no claim', async function () {
    const v = unused();
    v.spec = { claimRef: { name: 'data', uid: 'uid-data' } };
    const { client } = replayServer('10', [], { volume: v, endNow: true });
    expect(await liveReads(client, () => undefined, () => '10').volumeUse('v')).to.equal('it is bound to no claim');
  });
});
