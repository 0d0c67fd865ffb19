import { expect } from 'chai';
import { shortGraceWarning, STALE_SELECTED_NODE_GRACE_DEFAULT_MS } from '../../src/binder/binder-flags.js';

// A grace shorter than external-provisioner's retry cadence (plus its Event rate limit) can remove
// a gone node's selected-node while the provisioner still retries there: said at start.
describe('pv-binder flags: --stale-selected-node-grace', function () {
  it('warns about a grace between 0 and the default, naming the flag and the provisioner flag it must outlast', function () {
    for (const ms of [1, 3_000, 5 * 60_000, STALE_SELECTED_NODE_GRACE_DEFAULT_MS - 1]) {
      expect(shortGraceWarning(ms), String(ms)).to.match(/^--stale-selected-node-grace is shorter than 10m: .*--retry-interval-max/);
    }
  });
  it('says nothing for the default or longer, nor for 0 (remove at once) and negative values (never remove), both deliberate', function () {
    for (const ms of [STALE_SELECTED_NODE_GRACE_DEFAULT_MS, 60 * 60_000, 0, -1, Number.NaN]) expect(shortGraceWarning(ms), String(ms)).to.equal(undefined);
  });
});
