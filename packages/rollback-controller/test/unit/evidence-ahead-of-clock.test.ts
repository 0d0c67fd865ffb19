import { expect } from 'chai';
import type { Pod } from '@topovol/shared';
import { decideRollback, NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import type { RollbackDecision } from '../../src/rollback/decide-rollback.js';
import { EVIDENCE_CLOCK_SKEW_MS } from '../../src/rollback/stuck-evidence.js';
import { NOW, claim, failed, iso, node, pod, pv, record, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// Evidence dated ahead of this process's clock. Events carry their writer's clock, and anyone who
// may create Events in the namespace can write one naming a claim: a rollback's evidence time (the
// bar every later rollback of the workload must pass) is never more than EVIDENCE_CLOCK_SKEW_MS
// ahead of the clock that decided it.

const SKEW = EVIDENCE_CLOCK_SKEW_MS;
const YEAR = 365 * 24 * 3_600_000;
const base: W = { pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a' })], claims: [claim('c1', { volume: 'v1' }), claim('c2')], nodes: [node('a'), node('b')], observed: { 'uid-c1': seen() } };
const P = pod('p', ['c1', 'c2']);
const decide = (w: W, p: Pod = P, now = NOW): RollbackDecision => decideRollback(p, { ...world({ ...w, pods: [p, ...(w.pods ?? [])] }), now: () => now }, w.stuckSince, w.readySince);
const exhaustedAt = (...times: number[]): W => ({ ...base, failures: { c2: times.map((t) => failed('rpc error: code = ResourceExhausted', t)) } });

describe('rollback evidence dated ahead of the clock', function () {
  it('a failure dated within the skew counts now, with its own time', function () {
    const d = decide(exhaustedAt(NOW + SKEW));
    expect(d.kind === 'rollback' ? d.evidenceTime : d.kind).to.equal(NOW + SKEW);
  });

  it('a failure dated beyond the skew is not evidence yet: wait until the clock is within the skew of it', function () {
    const d = decide(exhaustedAt(NOW + SKEW + 60_000));
    expect(d.kind).to.equal('wait');
    expect(d.kind === 'wait' ? d.ms : undefined).to.equal(60_000);
    expect(d.kind === 'wait' ? d.why : '').to.match(/ahead of this clock/);
    // ... and once it is, it counts.
    const later = decide(exhaustedAt(NOW + SKEW + 60_000), P, NOW + 60_000);
    expect(later.kind === 'rollback' ? later.evidenceTime : later.kind).to.equal(NOW + SKEW + 60_000);
  });

  it('a forged failure a year ahead beside a genuine one: the rollback rests on the genuine one, so the next needs only evidence newer than that', function () {
    const d = decide(exhaustedAt(NOW - 5_000, NOW + YEAR));
    expect(d.kind === 'rollback' ? d.evidenceTime : d.kind).to.equal(NOW - 5_000);
  });

  it('after a rollback that rested on genuine evidence, a new genuine failure counts (a forged far-future one beside it does not hold it off)', function () {
    const last = record('uid-p', 1, NOW - 3_600_000);
    last.spec.evidenceTime = iso(NOW - 3_600_000 - 1_000);
    const d = decide({ ...exhaustedAt(NOW + YEAR, NOW - 5_000), rollbacks: [last] });
    expect(d.kind === 'rollback' ? `rollback ${d.attempt} at ${d.evidenceTime}` : d.kind).to.equal(`rollback 2 at ${NOW - 5_000}`);
  });

  it('only a failure a year ahead: the pod waits (never rolled back on it now), looked at again when it comes within the skew', function () {
    const d = decide(exhaustedAt(NOW + YEAR));
    expect(d).to.deep.include({ kind: 'wait', ms: YEAR - SKEW });
  });

  it('a record stamped a year ahead does not hide a nearer one: the wait ends when the nearer counts', function () {
    const d = decide(exhaustedAt(NOW + YEAR, NOW + SKEW + 10 * 60_000));
    expect(d).to.deep.include({ kind: 'wait', ms: 10 * 60_000 });
    expect(d.kind === 'wait' ? d.why : '').to.contain(new Date(NOW + SKEW + 10 * 60_000).toISOString());
  });

  it("the scheduler's node-affinity report dated beyond the skew waits too", function () {
    const p: Pod = { ...pod('p', ['c1']), status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: "0/2 nodes are available: 1 Insufficient memory, 1 node(s) didn't match PersistentVolume's node affinity.", lastTransitionTime: iso(NOW + SKEW + 1_000) }] } };
    expect(decide({ ...base, failures: {} }, p)).to.deep.include({ kind: 'wait', ms: 1_000 });
    const d = decide({ ...base, failures: {} }, p, NOW + 1_000);
    expect(d.kind === 'rollback' ? d.evidenceTime : d.kind).to.equal(NOW + SKEW + 1_000);
  });

  it("a node's own refusal is evidence as of now, whatever the Events say", function () {
    const d = decide({ ...exhaustedAt(NOW + YEAR), nodes: [node('b')], readySince: NOW - NODE_STATE_DWELL_MS }, pod('p', ['c1']));
    expect(d.kind === 'rollback' ? d.evidenceTime : d.kind).to.equal(NOW);
  });

  it('no evidence at all stays none (not a wait)', function () {
    expect(decide({ ...base, failures: {} }).kind).to.equal('none');
  });

  it('evidence ahead of the clock but not newer than the last rollback is none, not a wait', function () {
    const last = record('uid-p', 1, NOW - 3_600_000);
    last.spec.evidenceTime = iso(NOW + YEAR);
    expect(decide({ ...exhaustedAt(NOW + YEAR), rollbacks: [last] }).kind).to.equal('none');
  });
});
