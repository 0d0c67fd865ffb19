import { expect } from 'chai';
import { FlagError, parseFlags } from '@topovol/shared';
import { binderFlags, shortGraceWarning, STALE_SELECTED_NODE_GRACE_DEFAULT_MS } from '../../src/binder/binder-flags.js';

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

// The help has always said "a negative value never removes"; the duration parser used to refuse
// every negative value, so that setting could not be given at all.
describe('pv-binder flags: a negative --stale-selected-node-grace is accepted', function () {
  it('parses -1s to -1000 ms for this flag, and still refuses a negative duration for a flag that does not allow one', function () {
    expect(parseFlags(binderFlags, ['--stale-selected-node-grace=-1s']).values['stale-selected-node-grace']).to.equal(-1000);
    expect(parseFlags(binderFlags, ['--stale-selected-node-grace', '-1m30s']).values['stale-selected-node-grace']).to.equal(-90_000);
    const strict = binderFlags.map((f) => (f.name === 'stale-selected-node-grace' ? { ...f, allowNegative: false } : f));
    expect(() => parseFlags(strict, ['--stale-selected-node-grace=-1s'])).to.throw(FlagError, /must not be negative/);
  });
});
