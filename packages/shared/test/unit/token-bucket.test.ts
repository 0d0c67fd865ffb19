import { expect } from 'chai';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { TokenBucket } from '../../src/ratelimit/token-bucket.js';

/** Settles a promise's state without awaiting it, so a test can look at it mid-flight. */
function track(p: Promise<void>): { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } {
  const s: { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { state: 'pending' };
  p.then(
    () => (s.state = 'resolved'),
    (e: unknown) => {
      s.state = 'rejected';
      s.error = e;
    },
  );
  return s;
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TokenBucket', function () {
  describe('tryAccept: a full burst, then paced at qps', function () {
    const cases = [
      { qps: 10, burst: 3, period: 100 },
      { qps: 1, burst: 1, period: 1000 },
      { qps: 4, burst: 5, period: 250 },
      { qps: 10, burst: 0, period: 100 }, // burst < 1 behaves as 1
      { qps: 10, burst: -5, period: 100 },
    ];
    for (const { qps, burst, period } of cases) {
      it(`qps ${qps}, burst ${burst}`, function () {
        const clock = new FakeClock();
        const b = new TokenBucket(qps, burst, clock);
        const effectiveBurst = Math.max(1, burst);
        let accepted = 0;
        while (b.tryAccept()) accepted++;
        expect(accepted).to.equal(effectiveBurst);

        // One token per period afterwards, not earlier.
        for (let i = 0; i < 5; i++) {
          clock.advance(period - 1);
          expect(b.tryAccept(), `before period ${i}`).to.equal(false);
          clock.advance(1);
          expect(b.tryAccept(), `at period ${i}`).to.equal(true);
        }

        // Idle time refills only up to burst.
        clock.advance(period * 1000);
        accepted = 0;
        while (b.tryAccept()) accepted++;
        expect(accepted).to.equal(effectiveBurst);
      });
    }
  });

  describe('reserve: borrows future tokens, each later caller waiting one period longer', function () {
    const cases = [
      { qps: 5, burst: 1, want: [0, 200, 400, 600] },
      { qps: 10, burst: 2, want: [0, 0, 100, 200] },
      { qps: 3, burst: 1, want: [0, 334, 667, 1000] },
    ];
    for (const { qps, burst, want } of cases) {
      it(`qps ${qps}, burst ${burst}`, function () {
        const b = new TokenBucket(qps, burst, new FakeClock());
        expect(want.map(() => b.reserve())).to.deep.equal(want);
      });
    }

    it('a reservation that came due is not waited for again', function () {
      const clock = new FakeClock();
      const b = new TokenBucket(10, 1, clock);
      b.reserve();
      expect(b.reserve()).to.equal(100);
      clock.advance(100);
      expect(b.reserve()).to.equal(100);
    });
  });

  for (const qps of [0, -1, Number.NaN]) {
    it(`qps ${qps} is unlimited: never refuses, never waits`, async function () {
      const b = new TokenBucket(qps, 1, new FakeClock());
      expect(b.unlimited).to.equal(true);
      const accepted = Array.from({ length: 1000 }, () => b.tryAccept());
      expect(accepted.every(Boolean)).to.equal(true);
      expect(Array.from({ length: 1000 }, () => b.reserve()).every((ms) => ms === 0)).to.equal(true);
      await b.wait();
    });
  }

  it('is limited for qps > 0', function () {
    expect(new TokenBucket(0.5, 1, new FakeClock()).unlimited).to.equal(false);
  });

  it('wait resolves once the token is due', async function () {
    const clock = new FakeClock();
    const b = new TokenBucket(1, 1, clock);
    await b.wait(); // the initial token
    const w = track(b.wait());
    clock.advance(999);
    await flush();
    expect(w.state).to.equal('pending');
    clock.advance(1);
    await flush();
    expect(w.state).to.equal('resolved');
    expect(clock.pendingTimers()).to.equal(0);
  });

  describe('wait aborted', function () {
    const cases: { name: string; abort: (ac: AbortController) => void; check: (err: unknown) => void }[] = [
      {
        name: 'without a reason rejects with an AbortError',
        abort: (ac) => ac.abort(),
        check: (err) => expect((err as Error).name).to.equal('AbortError'),
      },
      {
        name: 'with an Error reason rejects with that error',
        abort: (ac) => ac.abort(new Error('stopping')),
        check: (err) => expect((err as Error).message).to.equal('stopping'),
      },
      {
        name: 'with a non-Error reason rejects with an AbortError carrying it as cause',
        abort: (ac) => ac.abort('bye'),
        check: (err) => {
          expect((err as Error).name).to.equal('AbortError');
          expect((err as Error).cause).to.equal('bye');
        },
      },
    ];
    for (const { name, abort, check } of cases) {
      it(name, async function () {
        const clock = new FakeClock();
        const b = new TokenBucket(1, 1, clock);
        b.reserve(); // empty the bucket so wait() has to wait
        const ac = new AbortController();
        const w = track(b.wait(ac.signal));
        await flush();
        expect(w.state).to.equal('pending');
        abort(ac);
        await flush();
        expect(w.state).to.equal('rejected');
        expect(w.error).to.be.instanceOf(Error);
        check(w.error);
        expect(clock.pendingTimers(), 'timer cancelled').to.equal(0);
        // The abandoned token was given back: the next caller waits one period, not two.
        expect(b.reserve()).to.equal(1000);
      });
    }

    it('an already aborted signal rejects without taking a token', async function () {
      const clock = new FakeClock();
      const b = new TokenBucket(1, 1, clock);
      const ac = new AbortController();
      ac.abort(new Error('early'));
      const w = track(b.wait(ac.signal));
      await flush();
      expect(w.state).to.equal('rejected');
      expect(b.tryAccept()).to.equal(true);
    });

    it('aborting after the wait resolved changes nothing', async function () {
      const clock = new FakeClock();
      const b = new TokenBucket(1, 1, clock);
      b.reserve();
      const ac = new AbortController();
      const w = track(b.wait(ac.signal));
      clock.advance(1000);
      await flush();
      ac.abort();
      await flush();
      expect(w.state).to.equal('resolved');
      expect(b.reserve()).to.equal(1000);
    });
  });
});
