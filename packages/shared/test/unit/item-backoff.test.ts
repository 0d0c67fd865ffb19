import { expect } from 'chai';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { doublingBackoffMs } from '../../src/ratelimit/doubling-backoff.js';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialBackoff,
  MaxOfRateLimiter,
} from '../../src/ratelimit/item-backoff.js';
import type { RateLimiter } from '../../src/ratelimit/item-backoff.js';

const MAX_MS = 1_000_000;

describe('ItemExponentialBackoff', function () {
  const cases = [
    { name: 'defaults: 5 ms doubling', limiter: () => new ItemExponentialBackoff<string>(), want: [5, 10, 20, 40, 80, 160] },
    { name: 'custom base and cap', limiter: () => new ItemExponentialBackoff<string>(100, 500), want: [100, 200, 400, 500, 500] },
    { name: 'cap at the base', limiter: () => new ItemExponentialBackoff<string>(7, 7), want: [7, 7, 7] },
  ];
  for (const { name, limiter, want } of cases) {
    it(name, function () {
      const r = limiter();
      expect(want.map(() => r.when('a'))).to.deep.equal(want);
      expect(r.numRequeues('a')).to.equal(want.length);
    });
  }

  it('tracks items independently', function () {
    const r = new ItemExponentialBackoff<string>();
    r.when('a');
    r.when('a');
    r.when('a');
    expect(r.when('b')).to.equal(5);
    expect(r.when('a')).to.equal(40);
    expect([r.numRequeues('a'), r.numRequeues('b'), r.numRequeues('c')]).to.deep.equal([4, 1, 0]);
  });

  it('caps at 1000 s, and stays capped after very many failures', function () {
    const r = new ItemExponentialBackoff<string>();
    const waits = Array.from({ length: 3000 }, () => r.when('x'));
    // 5 ms × 2^17 = 655 s < 1000 s < 5 ms × 2^18
    expect(waits[17]).to.equal(5 * 2 ** 17);
    expect(waits[18]).to.equal(MAX_MS);
    expect(waits.slice(18).every((w) => w === MAX_MS)).to.equal(true);
    expect(Math.max(...waits)).to.equal(MAX_MS);
  });

  it('forget resets only that item', function () {
    const r = new ItemExponentialBackoff<string>();
    for (let i = 0; i < 5; i++) {
      r.when('a');
      r.when('b');
    }
    r.forget('a');
    expect(r.numRequeues('a')).to.equal(0);
    expect(r.when('a')).to.equal(5);
    expect(r.when('b')).to.equal(160);
  });
});

describe('BucketRateLimiter', function () {
  it('lets a burst through, then spaces items at 1/qps, then refills', function () {
    const clock = new FakeClock();
    const r = new BucketRateLimiter<string>(10, 100, clock);
    const waits = Array.from({ length: 103 }, (_, i) => r.when(`k${i}`));
    expect(waits.slice(0, 100).every((w) => w === 0)).to.equal(true);
    expect(waits.slice(100)).to.deep.equal([100, 200, 300]);
    expect(r.numRequeues('k0')).to.equal(0);
    clock.advance(10_300 + 1000);
    expect(r.when('k0')).to.equal(0);
  });
});

describe('MaxOfRateLimiter', function () {
  it('waits for the longest; the bucket dominates once its burst is spent', function () {
    const clock = new FakeClock();
    const r = new MaxOfRateLimiter<string>(new ItemExponentialBackoff<string>(5, MAX_MS), new BucketRateLimiter<string>(10, 100, clock));
    const waits = Array.from({ length: 102 }, (_, i) => r.when(`k${i}`));
    expect(waits.slice(0, 100).every((w) => w === 5)).to.equal(true);
    expect(waits.slice(100)).to.deep.equal([100, 200]);
  });

  it('the item backoff dominates when it is longer', function () {
    const clock = new FakeClock();
    const r = new MaxOfRateLimiter<string>(new ItemExponentialBackoff<string>(5, MAX_MS), new BucketRateLimiter<string>(10, 100, clock));
    const waits = Array.from({ length: 10 }, () => r.when('a'));
    expect(waits).to.deep.equal([5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560]);
  });

  it('reports the largest numRequeues and forgets in all limiters', function () {
    const a = new ItemExponentialBackoff<string>();
    const b = new ItemExponentialBackoff<string>(1, 10);
    const r = new MaxOfRateLimiter<string>(a, b);
    b.when('x');
    r.when('x');
    r.when('x');
    expect([a.numRequeues('x'), b.numRequeues('x'), r.numRequeues('x')]).to.deep.equal([2, 3, 3]);
    r.forget('x');
    expect([a.numRequeues('x'), b.numRequeues('x'), r.numRequeues('x')]).to.deep.equal([0, 0, 0]);
  });

  it('with no limiters never waits', function () {
    const r: RateLimiter<string> = new MaxOfRateLimiter<string>();
    expect([r.when('a'), r.numRequeues('a')]).to.deep.equal([0, 0]);
  });
});

describe('defaultControllerRateLimiter', function () {
  it('is max(per-item 5 ms…1000 s, overall 10 qps burst 100)', function () {
    const clock = new FakeClock();
    const r = defaultControllerRateLimiter<string>(clock);
    expect([r.when('a'), r.when('a'), r.when('a')]).to.deep.equal([5, 10, 20]);
    expect(r.numRequeues('a')).to.equal(3);
    // 3 tokens gone; 97 more distinct items use up the burst, then the bucket paces.
    const waits = Array.from({ length: 99 }, (_, i) => r.when(`k${i}`));
    expect(waits.slice(0, 97).every((w) => w === 5)).to.equal(true);
    expect(waits.slice(97)).to.deep.equal([100, 200]);
    r.forget('a');
    expect(r.numRequeues('a')).to.equal(0);
    for (let i = 0; i < 40; i++) r.when('slow');
    expect(r.when('slow')).to.equal(MAX_MS);
  });

  it('caps the per-item backoff at maxBackoffMs when given (a loop that re-checks every key on a poll)', function () {
    const r = defaultControllerRateLimiter<string>(new FakeClock(), 60_000);
    const waits = Array.from({ length: 40 }, () => r.when('a'));
    expect(waits.slice(0, 3)).to.deep.equal([5, 10, 20]);
    expect(Math.max(...waits)).to.equal(60_000);
    expect(waits.at(-1)).to.equal(60_000);
  });
});

describe('doublingBackoffMs', function () {
  it('doubles from the base with each failure in a row, up to the cap; nothing before the first failure', function () {
    expect([0, 1, 2, 3, 4, 5].map((n) => doublingBackoffMs(100, n, 1000))).to.deep.equal([0, 100, 200, 400, 800, 1000]);
  });

  it('stays at the cap however many failures (2^n grows to Infinity, never wraps), and has none by default', function () {
    expect(doublingBackoffMs(5, 5000, 1_000_000)).to.equal(1_000_000);
    expect(doublingBackoffMs(5, 11)).to.equal(5120);
  });
});
