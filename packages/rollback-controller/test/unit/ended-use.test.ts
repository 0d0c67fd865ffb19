import { expect } from 'chai';
import { ENDED_USE_ABSENT_TTL_MS, EndedUse } from '../../src/rollback/ended-use.js';

describe('EndedUse: pods that ran and were deleted, by claim', function () {
  it('keeps an entry while its claim is cached, whatever its age; forgets it with the claim', function () {
    const cached = new Set(['ns/a']);
    const e = new EndedUse((k) => cached.has(k));
    e.record('ns/a', 'pod ns/p ran', 0);
    e.record('ns/b', 'pod ns/q ran', 0);
    e.prune(10 * ENDED_USE_ABSENT_TTL_MS);
    expect(e.get('ns/a')).to.equal('pod ns/p ran');
    expect(e.get('ns/b'), 'a claim not cached for longer than the TTL').to.equal(undefined);
    e.forget('ns/a');
    expect(e.get('ns/a')).to.equal(undefined);
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
