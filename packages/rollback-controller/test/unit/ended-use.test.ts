import { expect } from 'chai';
import type { Pod } from '@topovol/shared';
import { deletionRequestedAt, ENDED_USE_ABSENT_TTL_MS, ENDED_USE_CLOCK_MARGIN_MS, ENDED_USE_MAX_ABSENT, ENDED_USE_MAX_ABSENT_PER_NAMESPACE, EndedUse, fairShare, podScheduledAt } from '../../src/rollback/ended-use.js';

describe('EndedUse: pods that ran and were deleted, by claim', function () {
  it('keeps an entry while its claim is cached, whatever its age, and through its delete when the use has no known start', function () {
    const cached = new Set(['ns/a']);
    const e = new EndedUse((k) => cached.has(k));
    e.record('ns/a', 'pod ns/p ran', 0);
    e.record('ns/b', 'pod ns/q ran', 0);
    e.prune(10 * ENDED_USE_ABSENT_TTL_MS);
    expect(e.get('ns/a')).to.equal('pod ns/p ran');
    expect(e.get('ns/b'), 'a claim not cached for longer than the TTL').to.equal(undefined);
    e.forget('ns/a', 1);
    expect(e.get('ns/a'), 'its use had no known start').to.equal('pod ns/p ran');
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

  it('past ENDED_USE_MAX_ABSENT_PER_NAMESPACE claims not cached in one namespace (pods created and deleted in a loop), its oldest go and the loop is told which namespace; other namespaces keep theirs', function () {
    const cached = new Set(['tenant/kept']);
    const told: { namespaces: string[]; count: number }[] = [];
    const e = new EndedUse((k) => cached.has(k), (namespaces, count) => told.push({ namespaces: [...namespaces], count }));
    e.record('tenant/kept', 'pod tenant/p ran', 0);
    e.record('other/c', 'pod other/q ran', 0);
    // One a millisecond: all within the TTL.
    const n = 3 * ENDED_USE_MAX_ABSENT_PER_NAMESPACE;
    for (let i = 0; i < n; i++) e.record(`tenant/c${i}`, 'ran', i);
    expect(told.length, 'the loop was told each time uses were forgotten').to.be.greaterThan(0);
    expect(told.every((t) => t.namespaces.length === 1 && t.namespaces[0] === 'tenant')).to.equal(true);
    expect(told.reduce((a, t) => a + t.count, 0) + e.size).to.equal(n + 2);
    expect(e.size).to.be.at.most(ENDED_USE_MAX_ABSENT_PER_NAMESPACE + 1_000 + 2);
    expect(e.get('tenant/kept'), 'a cached claim keeps its use').to.equal('pod tenant/p ran');
    expect(e.get('other/c'), "another namespace's use is kept").to.equal('pod other/q ran');
    expect(e.get(`tenant/c${n - 1}`), 'the newest stays').to.equal('ran');
    expect(e.get('tenant/c0'), 'the oldest went').to.equal(undefined);
  });

  it('a claim recorded again counts as recorded then: the oldest by last record go first', function () {
    const told: string[][] = [];
    const e = new EndedUse(() => false, (namespaces) => told.push([...namespaces]));
    e.record('ns/first', 'ran', 0);
    for (let i = 0; i < ENDED_USE_MAX_ABSENT_PER_NAMESPACE; i++) e.record(`ns/c${i}`, 'ran', 0);
    e.record('ns/first', 'ran again', 0);
    e.prune(1);
    expect(told).to.deep.equal([['ns']]);
    expect(e.get('ns/first')).to.equal('ran again');
    expect(e.get('ns/c0')).to.equal(undefined);
  });

  it('past ENDED_USE_MAX_ABSENT claims not cached in all namespaces, the oldest go whatever their namespace', function () {
    const told: number[] = [];
    const e = new EndedUse(() => false, (_namespaces, count) => told.push(count));
    for (let i = 0; i < 2 * ENDED_USE_MAX_ABSENT; i++) e.record(`ns${i % 100}/c${i}`, 'ran', Math.floor(i / 10));
    expect(told.length).to.be.greaterThan(0);
    expect(e.size).to.be.at.most(ENDED_USE_MAX_ABSENT + 1_000 * 10);
  });

  it('past ENDED_USE_MAX_ABSENT in all, the namespaces holding the most lose theirs first: a tenant flooding many namespaces does not evict one holding a few', function () {
    const told: string[][] = [];
    const e = new EndedUse(() => false, (namespaces) => told.push([...namespaces]));
    // The victim's few uses, recorded first (the oldest of all).
    for (let i = 0; i < 5; i++) e.record(`victim/c${i}`, 'ran', 0);
    // A tenant with 25 namespaces, each kept under its own cap: 23,750 uses in all.
    const perNs = ENDED_USE_MAX_ABSENT_PER_NAMESPACE - 50;
    for (let n = 0; n < 25; n++) for (let i = 0; i < perNs; i++) e.record(`tenant${n}/c${i}`, 'ran', 0);
    e.prune(1);
    for (let i = 0; i < 5; i++) expect(e.get(`victim/c${i}`), `victim/c${i}`).to.equal('ran');
    expect(told.flat()).to.not.include('victim');
    expect(e.size).to.be.at.most(ENDED_USE_MAX_ABSENT / 2);
    expect(e.get(`tenant0/c${perNs - 1}`), "a tenant namespace's newest stays").to.equal('ran');
    expect(e.get('tenant0/c0'), 'its oldest went').to.equal(undefined);
  });

  it('fairShare: the most each count may keep so that all fit the total, small counts whole', function () {
    expect(fairShare([], 10)).to.equal(0);
    expect(fairShare([3, 4], 10), 'all fit').to.equal(4);
    expect(fairShare([1, 100, 100], 51)).to.equal(25);
    expect(fairShare([10, 10, 10], 15)).to.equal(5);
    for (const counts of [[5, 900, 950, 2_000], [1, 1, 1, 10_000], [300, 400, 500]]) {
      const share = fairShare(counts, 1_000);
      expect(counts.reduce((a, c) => a + Math.min(c, share), 0), String(counts)).to.be.at.most(1_000);
      expect(counts.reduce((a, c) => a + Math.min(c, share + 1), 0), `${String(counts)}: the largest such share`).to.be.above(1_000);
    }
  });
});

// The claim watch may deliver a claim's delete long after it happened, when a claim of the same name
// created since has had a pod that used its volume and went (seen at once on the pod watch).
describe('EndedUse: a claim delete forgets only uses that began before it', function () {
  const T = Date.parse('2026-11-29T10:00:00Z');

  it("a pod scheduled before the claim's deletion was asked for used that claim: forgotten, even if it was deleted after (pvc-protection holds the claim until then)", function () {
    const e = new EndedUse(() => true);
    // kubectl delete pvc data-0, then kubectl delete pod web-0: the StatefulSet makes both again.
    e.record('ns/c', 'pod ns/web-0 ran, and was deleted', 0, T - 3_600_000);
    e.forget('ns/c', T);
    expect(e.get('ns/c')).to.equal(undefined);
  });

  it('a pod scheduled after it used a claim created since (its delete delivered late): kept', function () {
    const e = new EndedUse(() => true);
    e.record('ns/c', 'pod ns/p0 was scheduled to node a, and was deleted', 0, T + 5_000);
    e.forget('ns/c', T);
    expect(e.get('ns/c')).to.equal('pod ns/p0 was scheduled to node a, and was deleted');
  });

  it('an HA control plane: the two times come from two API servers whose clocks may be seconds apart; a use that began within the margin before the deletion is kept, one before it forgotten', function () {
    // Scheduled through a server whose clock runs 10 s behind the one that stamped the deletion:
    // by the clocks the use began before the deletion, yet the claim it used may be one created since.
    const skewed = new EndedUse(() => true);
    skewed.record('ns/c', 'ran', 0, T - 10_000);
    skewed.forget('ns/c', T);
    expect(skewed.get('ns/c')).to.equal('ran');
    const earlier = new EndedUse(() => true);
    earlier.record('ns/c', 'ran', 0, T - ENDED_USE_CLOCK_MARGIN_MS - 1);
    earlier.forget('ns/c', T);
    expect(earlier.get('ns/c')).to.equal(undefined);
  });

  it('keeps it when either time is unknown, or both fall in the same instant', function () {
    for (const [since, deleted] of [
      [undefined, T],
      [T - 60_000, undefined],
      [T, T],
    ] as const) {
      const e = new EndedUse(() => true);
      e.record('ns/c', 'ran', 0, since);
      e.forget('ns/c', deleted);
      expect(e.get('ns/c'), `used since ${since}, deleted ${deleted}`).to.equal('ran');
    }
  });

  it('one use of unknown start among several keeps the entry; the latest start decides otherwise', function () {
    const unknown = new EndedUse(() => true);
    unknown.record('ns/c', 'a', 0, undefined);
    unknown.record('ns/c', 'b', 1, T - 60_000);
    unknown.forget('ns/c', T);
    expect(unknown.get('ns/c')).to.equal('b');

    const later = new EndedUse(() => true);
    later.record('ns/c', 'a', 0, T + 1_000);
    later.record('ns/c', 'b', 1, T - 60_000);
    later.forget('ns/c', T);
    expect(later.get('ns/c'), 'the use that began after the deletion still counts').to.equal('b');
  });

  it("the times: a deletion asked for is the deletionTimestamp less its grace period; a pod's scheduling is its PodScheduled condition turning True", function () {
    expect(deletionRequestedAt({ deletionTimestamp: '2026-11-29T10:00:30Z', deletionGracePeriodSeconds: 30 })).to.equal(T);
    expect(deletionRequestedAt({ deletionTimestamp: '2026-11-29T10:00:00Z' })).to.equal(T);
    expect(deletionRequestedAt({})).to.equal(undefined);
    expect(deletionRequestedAt(undefined)).to.equal(undefined);
    const scheduled = (status: string, lastTransitionTime?: string): Pod => ({ metadata: { name: 'p' }, status: { conditions: [{ type: 'PodScheduled', status, lastTransitionTime }] } });
    expect(podScheduledAt(scheduled('True', '2026-11-29T10:00:00Z'))).to.equal(T);
    expect(podScheduledAt(scheduled('False', '2026-11-29T10:00:00Z')), 'not scheduled').to.equal(undefined);
    expect(podScheduledAt(scheduled('True')), 'no time').to.equal(undefined);
    expect(podScheduledAt({ metadata: { name: 'p' } })).to.equal(undefined);
    // A kubelet whose clock runs behind stamps a time before the pod existed: the creation bounds it.
    const behind = { ...scheduled('True', '2026-11-29T09:00:00Z'), metadata: { name: 'p', creationTimestamp: '2026-11-29T10:00:00Z' } };
    expect(podScheduledAt(behind)).to.equal(T);
  });
});
