import { expect } from 'chai';
import fc from 'fast-check';
import { eventsAbout, involvedObjectUid, projectClaim, projectEvent, projectPod } from '@topovol/shared';
import type { Event, PersistentVolume, Pod, VolumeAttachment } from '@topovol/shared';
import { claimNoiseArb, claimsByIdentity, eventNoiseArb, podNoiseArb, withEventNoise, withNoise, withPodNoise } from '@topovol/testing';
import { decideRollback, NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import { claim, failed, node, NOW, pod, pv, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

/** What the generator may make true of one pinned volume; each is evidence it may hold data, or is not this pod's. */
const volumeFacts = fc.record({
  usage: fc.constantFrom('unused', 'unused', 'unused', 'used'),
  forPod: fc.constantFrom('uid-p', 'uid-p', 'uid-p', 'uid-other'),
  claimRefUid: fc.constantFrom('match', 'match', 'match', 'stale'),
  attached: fc.constantFrom(false, false, false, true),
  inUse: fc.constantFrom(false, false, false, true),
  otherPod: fc.constantFrom<'none' | 'Pending' | 'Scheduled' | 'Running'>('none', 'none', 'none', 'none', 'Pending', 'Scheduled', 'Running'),
  /** This process watched the claim's pods since the volume was provisioned (not restarted, no relist since). */
  watched: fc.constantFrom(true, true, true, true, true, true, true, false),
  /** A pod of the claim was seen deleted after it was scheduled. */
  endedUse: fc.constantFrom(false, false, false, false, false, false, false, true),
  /** The claim was restored from a snapshot. */
  prePopulated: fc.constantFrom(false, false, false, false, false, false, false, true),
});
type VolumeFacts = typeof volumeFacts extends fc.Arbitrary<infer T> ? T : never;

const worldFacts = fc.record({
  volumes: fc.array(volumeFacts, { minLength: 1, maxLength: 3 }),
  podPhase: fc.constantFrom('Pending', 'Pending', 'Pending', 'Running', 'Succeeded', 'Failed'),
  containerStarted: fc.constantFrom(false, false, false, true),
  nodeA: fc.constantFrom<'ready' | 'cordoned' | 'gone'>('ready', 'cordoned', 'gone'),
  siblingFailed: fc.boolean(),
});
type WorldFacts = typeof worldFacts extends fc.Arbitrary<infer T> ? T : never;

/** The pod p, claims c1..cN bound to volumes v1..vN provisioned for node a, and a sibling claim s. */
function build(f: WorldFacts): { p: Pod; w: W } {
  const names = f.volumes.map((_, i) => `c${i + 1}`);
  const p = pod('p', [...names, 's'], { phase: f.podPhase });
  if (f.containerStarted) p.status = { ...p.status, containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, started: true }] };
  const pvs: PersistentVolume[] = [];
  const pods: Pod[] = [p];
  const attachments: VolumeAttachment[] = [];
  const inUse: string[] = [];
  const observed: NonNullable<W['observed']> = {};
  const ended: NonNullable<W['ended']> = {};
  f.volumes.forEach((v: VolumeFacts, i) => {
    const c = names[i]!;
    const vol = pv(`v${i + 1}`, c, { usage: v.usage, forNode: 'a', forPod: v.forPod });
    if (v.claimRefUid === 'stale') vol.spec!.claimRef!.uid = 'uid-of-an-earlier-claim';
    pvs.push(vol);
    if (v.attached) attachments.push({ metadata: { name: `va-${i}` }, spec: { attacher: 'x', nodeName: 'a', source: { persistentVolumeName: `v${i + 1}` } } });
    if (v.inUse) inUse.push(`v${i + 1}`);
    if (v.otherPod !== 'none') pods.push(pod(`q${i}`, [c], v.otherPod === 'Scheduled' ? { nodeName: 'a' } : { phase: v.otherPod }));
    if (v.watched) observed[`uid-${c}`] = seen();
    if (v.endedUse) ended[`ns/${c}`] = `pod ns/q using claim ${c} was scheduled to node a, and was deleted`;
  });
  const dataSource = { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' };
  const w: W = {
    pvs,
    pods,
    attachments,
    inUse: { a: inUse },
    claims: [...names.map((c, i) => (f.volumes[i]!.prePopulated ? { ...claim(c), spec: { volumeName: `v${i + 1}`, dataSource } } : claim(c, { volume: `v${i + 1}` }))), claim('s')],
    observed,
    ended,
    nodes: [...(f.nodeA === 'gone' ? [] : [node('a', f.nodeA === 'cordoned' ? { unschedulable: true } : {})]), node('b')],
    failures: f.siblingFailed ? { s: [failed('rpc error: code = ResourceExhausted')] } : {},
    // Seen ready to roll back long enough for the node's state alone to count (NODE_STATE_DWELL_MS).
    readySince: NOW - NODE_STATE_DWELL_MS,
  };
  return { p, w };
}

/**
 * Stated from the generated facts, not from the implementation's own checks: a pinned volume may
 * be rolled back only if nothing suggests it holds data (the pod never ran, no attachment, no node
 * reports it in use, no other pod uses its claim, none was seen deleted after using it, the claim was
 * not pre-populated, not marked used, and its claim's pods were watched since it was provisioned) and
 * it is this pod's (provisioned for it, bound to the claim that exists now).
 */
function mayRollBack(f: WorldFacts, v: VolumeFacts): boolean {
  const podRan = f.podPhase !== 'Pending' || f.containerStarted;
  return !podRan && v.usage === 'unused' && v.forPod === 'uid-p' && v.claimRefUid === 'match' && !v.attached && !v.inUse && v.otherPod === 'none' && v.watched && !v.endedUse && !v.prePopulated;
}

// Safety of the rollback decisions over random clusters (kubernetes #94217's fix must never undo a
// volume that may hold data): whatever else holds, a used volume is never rolled back.
describe('rollback decisions: safety properties', function () {
  it('a rollback is decided only when every pinned volume is provably unused and this pod\'s', function () {
    let rollbacks = 0;
    let refusals = 0;
    fc.assert(
      fc.property(worldFacts, (f) => {
        const { p, w } = build(f);
        const d = decideRollback(p, world(w), w.stuckSince, w.readySince);
        if (d.kind === 'refuse') refusals++;
        if (d.kind !== 'rollback') return;
        rollbacks++;
        f.volumes.forEach((v, i) => expect(mayRollBack(f, v), `v${i + 1} rolled back though ${JSON.stringify({ ...v, podPhase: f.podPhase, containerStarted: f.containerStarted })}`).to.equal(true));
      }),
      { numRuns: 6000 },
    );
    // Not vacuous: many worlds reach the point where the evidence decides, both ways.
    expect(rollbacks, 'rollbacks decided').to.be.above(10);
    expect(refusals, 'rollbacks refused').to.be.above(300);
  });

  it("the node's state alone (no failure reported) never rolls back a pod first seen ready now: it waits the dwell", function () {
    fc.assert(
      fc.property(worldFacts, (f) => {
        if (f.siblingFailed) return;
        const { p, w } = build(f);
        expect(decideRollback(p, world(w), w.stuckSince, undefined).kind).to.not.equal('rollback');
      }),
      { numRuns: 2000 },
    );
  });

  it('and when every pinned volume is provably unused and the node refused the pod, the rollback is decided (the safety check is not "never")', function () {
    fc.assert(
      fc.property(worldFacts, (f) => {
        // Node a is gone and the sibling claim failed there: nothing is left undecided.
        const safe = f.volumes.every((v) => mayRollBack(f, v)) && f.nodeA === 'gone' && f.siblingFailed;
        if (!safe) return;
        const { p, w } = build(f);
        expect(decideRollback(p, world(w), w.stuckSince, w.readySince).kind).to.equal('rollback');
      }),
      { numRuns: 2000 },
    );
  });
});

// The claim informer caches projectClaim's copy: whatever a claim's creator adds, the rollback
// decides the same on it as on the whole claim (the record's templates are read from the server).
describe('rollback decisions: the cached claim projection decides as the whole claim', function () {
  it('decideRollback is the same on projected claims as on whole ones', function () {
    fc.assert(
      fc.property(worldFacts, claimNoiseArb, (f, noise) => {
        const { p, w } = build(f);
        const whole = { ...w, claims: (w.claims ?? []).map((c) => withNoise(c, noise)) };
        const projected = { ...w, claims: whole.claims.map(projectClaim) };
        const same = (x: unknown): unknown => claimsByIdentity(x, { cutValues: noise.longValue !== undefined });
        expect(same(decideRollback(p, world(projected), w.stuckSince))).to.deep.equal(same(decideRollback(p, world(whole), w.stuckSince)));
      }),
      { numRuns: 3000 },
    );
  });
});

// The pod informer caches projectPod's copy, and the pod decided on is that copy too: whatever a
// pod's creator or the kubelet adds (containers and their images, conditions, IPs, start time,
// owners that are not the controller, other volumes), the evidence of use must read the same.
describe('rollback decisions: the cached pod projection decides as the whole pod', function () {
  it('decideRollback is the same on projected pods as on whole ones', function () {
    let decided = 0;
    fc.assert(
      fc.property(worldFacts, podNoiseArb, (f, noise) => {
        const { w } = build(f);
        const whole = (w.pods ?? []).map((x) => withPodNoise(x, noise));
        const projected = whole.map(projectPod);
        const d = decideRollback(whole[0]!, world({ ...w, pods: whole }), w.stuckSince);
        if (d.kind !== 'none') decided++;
        expect(decideRollback(projected[0]!, world({ ...w, pods: projected }), w.stuckSince)).to.deep.equal(d);
      }),
      { numRuns: 3000 },
    );
    // Not vacuous: most worlds get past the first checks (a deleted or ended pod decides nothing).
    expect(decided, 'worlds decided beyond none').to.be.above(1000);
  });
});

// The ProvisioningFailed Events are cached as projectEvent's copies: whatever a recorder adds, and
// whichever way it writes the time, the evidence of a stuck pod must read the same.
describe('rollback decisions: the cached Event projection decides as the whole Event', function () {
  it('decideRollback is the same on projected ProvisioningFailed Events as on whole ones', function () {
    let withFailures = 0;
    fc.assert(
      fc.property(worldFacts, eventNoiseArb, (f, noise) => {
        const { p, w } = build(f);
        // Filed as the loop files them: under the claim's uid, then eventsAbout (namespace and name).
        const about = (c: string, e: Event): Event => ({ ...e, metadata: { ...e.metadata, namespace: 'ns' }, involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: c, uid: `uid-${c}` } });
        const whole = Object.entries(w.failures ?? {}).flatMap(([c, es]) => es.map((e) => withEventNoise(about(c, e), noise)));
        if (whole.length > 0) withFailures++;
        const decide = (events: Event[]): unknown => {
          const base = world(w);
          return decideRollback(p, { ...base, provisioningFailures: (c) => eventsAbout(events.filter((e) => involvedObjectUid(e).includes(c.metadata?.uid ?? '')), c) }, w.stuckSince);
        };
        expect(decide(whole.map(projectEvent))).to.deep.equal(decide(whole));
      }),
      { numRuns: 3000 },
    );
    expect(withFailures, 'worlds with a failed sibling').to.be.above(1000);
  });
});
