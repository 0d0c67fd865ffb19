import { expect } from 'chai';
import { FlagError, parseFlags } from '@topovol/shared';
import { MAX_ROLLBACKS_FLAG, rollbackFlags } from '../../src/rollback/rollback-flags.js';

// A negative limit was taken silently and behaved as 0; it is a typo, refused at start as upstream's
// binaries refuse a bad flag (exit 2 with the reason).
describe('rollback flags: --rollback-max-per-workload', function () {
  it('takes 0 (nothing rolled back, each stuck pod warned) and more, refuses a negative value naming the flag', function () {
    expect(parseFlags(rollbackFlags, [`--${MAX_ROLLBACKS_FLAG}=0`]).values[MAX_ROLLBACKS_FLAG]).to.equal(0);
    expect(parseFlags(rollbackFlags, [`--${MAX_ROLLBACKS_FLAG}=5`]).values[MAX_ROLLBACKS_FLAG]).to.equal(5);
    expect(() => parseFlags(rollbackFlags, [`--${MAX_ROLLBACKS_FLAG}=-1`])).to.throw(FlagError, /--rollback-max-per-workload.*must be at least 0/);
  });
});
