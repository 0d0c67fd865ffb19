import { expect } from 'chai';
import { deletionRequestedAt, ENDED_USE_ABSENT_TTL_MS, EndedUse } from '../../src/rollback/ended-use.js';

describe('EndedUse: pods that ran and were deleted, by claim', function () {
  it('keeps an entry while its claim is cached, whatever its age, and through its delete when the use has no known end', function () {
    const cached = new Set(['ns/a']);
    const e = new EndedUse((k) => cached.has(k));
    e.record('ns/a', 'pod ns/p ran', 0);
    e.record('ns/b', 'pod ns/q ran', 0);
    e.prune(10 * ENDED_USE_ABSENT_TTL_MS);
    expect(e.get('ns/a')).to.equal('pod ns/p ran');
    expect(e.get('ns/b'), 'a claim not cached for longer than the TTL').to.equal(undefined);
    e.forget('ns/a', 1);
    expect(e.get('ns/a'), 'its use had no known end').to.equal('pod ns/p ran');
  });

  it('keeps an entry of a claim not cached (yet: its watch lags) for the TTL', function () {
    const e = new EndedUse(() => false);
    e.record('ns/late', 'pod ns/p was scheduled to node n1, and was deleted', 1_000);
    e.prune(1_000 + ENDED_USE_ABSENT_TTL_MS);
    expect(e.get('ns/late')).to.equal('pod ns/p was scheduled to node n1, and was deleted');
  });

  it('stays bounded under a stream of pods naming claims that never appear', function () {
    const e = new EndedUse(() => false);
    const step = 1_000;
    for (let i = 0; i < 20_000; i++) e.record(`ns/c${i}`, 'ran', i * step);
    // One entry per second for ~5.5 hours: about an hour's worth (and a minute's pruning slack) remains.
    expect(e.size).to.be.at.most(ENDED_USE_ABSENT_TTL_MS / step + 60 + 1);
    expect(e.get('ns/c19999')).to.equal('ran');
  });
});

// The claim watch may deliver a claim's delete long after it happened, when a claim of the same name
// created since has had a pod that used its volume and went (seen at once on the pod watch).
describe('EndedUse: a claim delete forgets only uses that ended before it', function () {
  const T = Date.parse('2026-11-29T10:00:00Z');

  it('a use that ended before the claim deletion was asked for is the deleted claim\'s: forgotten', function () {
    const e = new EndedUse(() => true);
    e.record('ns/c', 'pod ns/p ran, and was deleted', 0, T - 60_000);
    e.forget('ns/c', T);
    expect(e.get('ns/c')).to.equal(undefined);
  });

  it('a use that ended after it (a claim re-created since, its delete delivered late) is kept', function () {
    const e = new EndedUse(() => true);
    e.record('ns/c', 'pod ns/p0 was scheduled to node a, and was deleted', 0, T + 5_000);
    e.forget('ns/c', T);
    expect(e.get('ns/c')).to.equal('pod ns/p0 was scheduled to node a, and was deleted');
  });

  it('keeps it when either time is unknown, or both fall in the same instant', function () {
    for (const [ended, deleted] of [
      [undefined, T],
      [T - 60_000, undefined],
      [T, T],
    ] as const) {
      const e = new EndedUse(() => true);
      e.record('ns/c', 'ran', 0, ended);
      e.forget('ns/c', deleted);
      expect(e.get('ns/c'), `ended ${ended}, deleted ${deleted}`).to.equal('ran');
    }
  });

  it('one use of unknown end among several keeps the entry; the latest end decides otherwise', function () {
    const unknown = new EndedUse(() => true);
    unknown.record('ns/c', 'a', 0, undefined);
    unknown.record('ns/c', 'b', 1, T - 60_000);
    unknown.forget('ns/c', T);
    expect(unknown.get('ns/c')).to.equal('b');

    const later = new EndedUse(() => true);
    later.record('ns/c', 'a', 0, T + 1_000);
    later.record('ns/c', 'b', 1, T - 60_000);
    later.forget('ns/c', T);
    expect(later.get('ns/c'), 'the use that ended after the deletion still counts').to.equal('b');
  });

  it('a deletion asked for is the deletionTimestamp less the grace period the API server added', function () {
    expect(deletionRequestedAt({ deletionTimestamp: '2026-11-29T10:00:30Z', deletionGracePeriodSeconds: 30 })).to.equal(T);
    expect(deletionRequestedAt({ deletionTimestamp: '2026-11-29T10:00:00Z' })).to.equal(T);
    expect(deletionRequestedAt({})).to.equal(undefined);
    expect(deletionRequestedAt(undefined)).to.equal(undefined);
  });
});
