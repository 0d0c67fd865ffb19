import { expect } from 'chai';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { BucketRateLimiter, defaultControllerRateLimiter, ItemExponentialBackoff, MaxOfRateLimiter } from '../../src/ratelimit/item-backoff.js';

describe('per-item backoff (client-go DefaultControllerRateLimiter semantics)', function () {
  it('doubles from 5 ms per failure, per item', function () {
    const r = new ItemExponentialBackoff<string>(5, 1_000_000);
    expect([r.when('a'), r.when('a'), r.when('a'), r.when('b'), r.when('a')]).to.deep.equal([5, 10, 20, 5, 40]);
    expect(r.numRequeues('a')).to.equal(4);
  });

  it('caps at 1000 s even after very many failures', function () {
    const r = new ItemExponentialBackoff<string>(5, 1_000_000);
    let last = 0;
    for (let i = 0; i < 2000; i++) last = r.when('x');
    expect(last).to.equal(1_000_000);
  });

  it('forget resets an item', function () {
    const r = new ItemExponentialBackoff<string>();
    r.when('a');
    r.when('a');
    r.forget('a');
    expect(r.numRequeues('a')).to.equal(0);
    expect(r.when('a')).to.equal(5);
  });

  it('the overall bucket dominates once its burst is spent', function () {
    const clock = new FakeClock();
    const r = new MaxOfRateLimiter<string>(new ItemExponentialBackoff<string>(5, 1_000_000), new BucketRateLimiter<string>(10, 100, clock));
    const waits = Array.from({ length: 102 }, (_, i) => r.when(`k${i}`));
    expect(waits.slice(0, 100).every((w) => w === 5)).to.equal(true);
    expect(waits[100]).to.equal(100);
    expect(waits[101]).to.equal(200);
  });

  it('defaultControllerRateLimiter starts at 5 ms', function () {
    const r = defaultControllerRateLimiter<string>(new FakeClock());
    expect([r.when('a'), r.when('a')]).to.deep.equal([5, 10]);
  });
});
