import { expect } from 'chai';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { TokenBucket } from '../../src/ratelimit/token-bucket.js';

describe('TokenBucket', function () {
  it('starts full: burst tokens at once, then paced at qps', function () {
    const clock = new FakeClock();
    const b = new TokenBucket(10, 3, clock);
    expect([b.tryAccept(), b.tryAccept(), b.tryAccept(), b.tryAccept()]).to.deep.equal([true, true, true, false]);
    clock.advance(99);
    expect(b.tryAccept()).to.equal(false);
    clock.advance(1);
    expect(b.tryAccept()).to.equal(true);
  });

  it('reserve hands out future tokens with growing waits', function () {
    const clock = new FakeClock();
    const b = new TokenBucket(5, 1, clock);
    expect([b.reserve(), b.reserve(), b.reserve()]).to.deep.equal([0, 200, 400]);
  });

  for (const qps of [0, -1]) {
    it(`qps ${qps} means unlimited`, async function () {
      const b = new TokenBucket(qps, 1, new FakeClock());
      for (let i = 0; i < 1000; i++) expect(b.tryAccept()).to.equal(true);
      await b.wait();
      expect(b.unlimited).to.equal(true);
    });
  }

  it('wait resolves when the token is due and rejects when aborted', async function () {
    const clock = new FakeClock();
    const b = new TokenBucket(1, 1, clock);
    await b.wait();
    let done = false;
    const p = b.wait().then(() => (done = true));
    clock.advance(999);
    await Promise.resolve();
    expect(done).to.equal(false);
    clock.advance(1);
    await p;
    expect(done).to.equal(true);

    const ac = new AbortController();
    const waiting = b.wait(ac.signal);
    ac.abort();
    let err: unknown;
    try {
      await waiting;
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(Error);
    // The aborted wait gave its token back: the next one is due after one period, not two.
    expect(b.reserve()).to.equal(1000);
  });
});
