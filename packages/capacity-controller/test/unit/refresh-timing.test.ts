import { expect } from 'chai';
import fc from 'fast-check';
import { refreshDecision } from '../../src/objects/refresh-timing.js';
import type { ItemState, RefreshDecision } from '../../src/objects/refresh-timing.js';

const POLL = 60_000;
const MIN = 5_000;
const T = 1_000_000;
const measured = { available: 10n };
const at = (st: Partial<ItemState>, now = T): RefreshDecision => refreshDecision({ refreshedAt: 0, dirty: false, failures: 0, ...st }, now, { pollIntervalMs: POLL, minRefreshMs: MIN });

describe('capacity refresh timing: leading edge, coalesced bursts, polls', function () {
  it('the first measurement at once', function () {
    expect(at({ dirty: true })).to.deep.equal({ call: true, cause: 'first' });
  });

  it('a change right after a poll is measured at once (a poll opens no coalescing window)', function () {
    expect(at({ measured, refreshedAt: T - 100, dirty: true })).to.deep.equal({ call: true, cause: 'event' });
  });

  it('a change during a poll\'s call: asked again as soon as that call returns', function () {
    // The call's answer may predate the change; the item stays dirty, and no event call is recent.
    expect(at({ measured, refreshedAt: T, dirty: true, eventCallAt: T - 30_000 })).to.deep.equal({ call: true, cause: 'event' });
  });

  it('changes within the interval of a change\'s call wait for its end, merged into one call', function () {
    expect(at({ measured, refreshedAt: T - 900, dirty: true, eventCallAt: T - 1_000 })).to.deep.equal({ call: false, afterMs: MIN - 1_000 });
    expect(at({ measured, refreshedAt: T - 900, dirty: true, eventCallAt: T - MIN })).to.deep.equal({ call: true, cause: 'event' });
  });

  it('after failures, the backoff alone paces the retries', function () {
    expect(at({ measured, dirty: true, failures: 2, retryAt: T + 2_000, eventCallAt: T - 10_000 })).to.deep.equal({ call: false, afterMs: 2_000 });
    expect(at({ measured, dirty: true, failures: 2, retryAt: T, eventCallAt: T - 1_000 })).to.deep.equal({ call: false, afterMs: MIN - 1_000 });
    expect(at({ measured, dirty: true, failures: 2, retryAt: T - 1 })).to.deep.equal({ call: true, cause: 'retry' });
    expect(at({ dirty: true, failures: 1, retryAt: T + 500 })).to.deep.equal({ call: false, afterMs: 500 });
  });

  it('nothing changed: the next poll counts from the last answer', function () {
    expect(at({ measured, refreshedAt: T - 10_000 })).to.deep.equal({ call: false, afterMs: POLL - 10_000 });
    expect(at({ measured, refreshedAt: T - POLL })).to.deep.equal({ call: true, cause: 'poll' });
  });
  it('the first measurement ignores any window: there is nothing to coalesce with', function () {
    expect(at({ dirty: true, eventCallAt: T - 1 })).to.deep.equal({ call: true, cause: 'first' });
  });

  it('a poll that falls due during a backoff waits for it', function () {
    expect(at({ measured, refreshedAt: T - POLL, failures: 1, retryAt: T + 3_000 })).to.deep.equal({ call: false, afterMs: 3_000 });
  });

  // Any state, any time: the rules each decision keeps, and waiting as told always leads to a call.
  describe('for any item state', function () {
    const state = fc.record({
      measured: fc.option(fc.constant(measured), { nil: undefined }),
      refreshedAt: fc.integer({ min: T - 2 * POLL, max: T }),
      dirty: fc.boolean(),
      eventCallAt: fc.option(fc.integer({ min: T - 2 * MIN, max: T }), { nil: undefined }),
      failures: fc.integer({ min: 0, max: 5 }),
      retryAt: fc.option(fc.integer({ min: T - POLL, max: T + POLL }), { nil: undefined }),
    });

    it('never calls during a backoff, within the interval of a change\'s call, or before a clean figure\'s poll', function () {
      fc.assert(
        fc.property(state, fc.integer({ min: T, max: T + 2 * POLL }), (st, now) => {
          const d = at(st, now);
          if (!d.call) return d.afterMs > 0;
          const afterBackoff = now >= (st.retryAt ?? 0);
          const afterWindow = !st.measured || !st.dirty || st.eventCallAt === undefined || now >= st.eventCallAt + MIN;
          const afterPoll = !st.measured || st.dirty || now >= st.refreshedAt + POLL;
          return afterBackoff && afterWindow && afterPoll;
        }),
      );
    });

    it('waiting afterMs, twice at most, reaches a call no later than the latest bound', function () {
      fc.assert(
        fc.property(state, (st) => {
          let now = T;
          for (let step = 0; step < 3; step++) {
            const d = at(st, now);
            if (d.call) return now <= Math.max(T, st.retryAt ?? 0, (st.eventCallAt ?? 0) + MIN, st.refreshedAt + POLL);
            now += d.afterMs;
          }
          return false;
        }),
      );
    });
  });
});
