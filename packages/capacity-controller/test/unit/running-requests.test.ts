import { expect } from 'chai';
import fc from 'fast-check';
import { callNeededSince } from '../../src/objects/refresh-timing.js';
import type { ItemState } from '../../src/objects/refresh-timing.js';
import { requestKey, RunningRequests } from '../../src/source/running-requests.js';

const iv = { pollIntervalMs: 60_000, minRefreshMs: 5_000 };
const state = (st: Partial<ItemState>): ItemState => ({ refreshedAt: 0, dirty: false, failures: 0, ...st });

describe('shared GetCapacity requests', function () {
  it('a request is its parameters and segment, whatever the order of their keys', function () {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.string()), fc.dictionary(fc.string(), fc.string()), (params, segment) => {
        const reversed = (o: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(o).reverse());
        expect(requestKey(reversed(params), reversed(segment))).to.equal(requestKey(params, segment));
      }),
    );
    expect(requestKey({ pool: 'a' }, { zone: 'z1' })).not.to.equal(requestKey({ pool: 'b' }, { zone: 'z1' }));
    expect(requestKey({ pool: 'a' }, { zone: 'z1' })).not.to.equal(requestKey({ pool: 'a' }, { zone: 'z2' }));
    // A parameter is not a topology key of the same name.
    expect(requestKey({ zone: 'z1' }, {})).not.to.equal(requestKey({}, { zone: 'z1' }));
  });

  it('a running call answers for an item only if it started at or after the item needed one', function () {
    const r = new RunningRequests();
    const k = requestKey({}, { node: 'n1' });
    r.begin(k, 100);
    expect(r.covers(k, 100)).to.equal(true);
    expect(r.covers(k, 50)).to.equal(true);
    expect(r.covers(k, 101), 'a change after the call started is not in its answer').to.equal(false);
    expect(r.covers(requestKey({}, { node: 'n2' }), 0), 'another request').to.equal(false);
    r.begin(k, 200);
    expect(r.covers(k, 150), 'the later of two running calls').to.equal(true);
    r.end(k, 200);
    expect(r.covers(k, 150)).to.equal(false);
    r.end(k, 100);
    expect(r.covers(k, 0), 'nothing running').to.equal(false);
  });

  const cases: { name: string; st: Partial<ItemState>; cause: 'first' | 'event' | 'retry' | 'poll'; since: number }[] = [
    { name: 'first figure: since the item was wanted', st: { createdAt: 10 }, cause: 'first', since: 10 },
    { name: 'a change: since the last change', st: { lastEventAt: 500, createdAt: 10 }, cause: 'event', since: 500 },
    { name: 'a poll: since it fell due', st: { refreshedAt: 1_000 }, cause: 'poll', since: 61_000 },
    { name: 'a retry after failures: never shared', st: { failures: 2 }, cause: 'retry', since: Infinity },
    { name: 'a change with no recorded time: never shared', st: {}, cause: 'event', since: Infinity },
  ];
  for (const c of cases) {
    it(`the instant a shared call must have started by: ${c.name}`, function () {
      expect(callNeededSince(state(c.st), c.cause, iv)).to.equal(c.since);
    });
  }
});
