import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import { ReflectorBackoff } from '../../src/informer/reflector-backoff.js';
import { runListWatch } from '../../src/informer/list-watch-loop.js';
import type { ListWatchSteps, WatchOutcome } from '../../src/informer/list-watch-loop.js';

// client-go's reflector: wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0).

describe('informer backoff: the reflector backoff manager’s numbers', function () {
  it('steps 800 ms doubling to a 30 s cap, each wait jittered up to twice its step', function () {
    let t = 0;
    const low = new ReflectorBackoff({ now: () => t, random: () => 0 });
    const high = new ReflectorBackoff({ now: () => t, random: () => 0.999999 });
    const lows: number[] = [];
    const highs: number[] = [];
    for (let i = 0; i < 9; i++) {
      lows.push(low.next());
      highs.push(Math.round(high.next()));
      t += 1_000;
    }
    expect(lows).to.deep.equal([800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000]);
    expect(highs).to.deep.equal([1_600, 3_200, 6_400, 12_800, 25_600, 51_200, 60_000, 60_000, 60_000]);
  });

  it('starts afresh only when no step was taken for more than 2 minutes', function () {
    let t = 0;
    const b = new ReflectorBackoff({ now: () => t, random: () => 0 });
    for (let i = 0; i < 7; i++) b.next();
    t += 120_000;
    expect(b.next(), 'exactly 2 min since the last step: not yet healthy').to.equal(30_000);
    t += 120_001;
    expect(b.next()).to.equal(800);
    expect(b.next()).to.equal(1_600);
  });
});

/** A hand-driven list/watch: a scripted outcome per watch ('fail': a 500; an Error: that failure), a clock moved only by the loop's sleeps. */
function scripted(
  watches: Array<WatchOutcome | 'fail' | Error>,
  watchLastsMs = 0,
): { steps: ListWatchSteps; sleeps: number[]; reported: number[]; lists: () => number; done: Promise<void> } {
  let t = 0;
  let lists = 0;
  const sleeps: number[] = [];
  /** The waits failed() was told of. */
  const reported: number[] = [];
  const ac = new AbortController();
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  const steps: ListWatchSteps = {
    clock: {
      now: () => t,
      sleep: (ms) => {
        sleeps.push(ms);
        t += ms;
        return Promise.resolve();
      },
    },
    random: () => 0,
    takeRelistRequest: () => false,
    relistRequested: () => false,
    interrupted: () => false,
    list: () => {
      lists++;
      return Promise.resolve();
    },
    watch: () => {
      const next = watches.shift();
      t += watchLastsMs;
      if (next === undefined) {
        ac.abort();
        finish();
        return Promise.resolve({ kind: 'closed', events: 1 });
      }
      if (next instanceof Error) return Promise.reject(next);
      return next === 'fail' ? Promise.reject(Object.assign(new Error('boom'), { statusCode: 500 })) : Promise.resolve(next);
    },
    restarted: () => undefined,
    failed: (_kind, _message, retryInMs) => void reported.push(retryInMs),
  };
  void runListWatch(ac.signal, steps);
  return { steps, sleeps, reported, lists: () => lists, done };
}

describe('informer list/watch loop: backoff between failures', function () {
  it('a watch ended by a 500 error event, again and again, is relisted at the reflector’s pace: capped at 30 s, not in a loop', async function () {
    const s = scripted(Array.from({ length: 10 }, (): WatchOutcome => ({ kind: 'relist', why: 'error' })));
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000, 30_000]);
    expect(s.lists()).to.equal(11);
  });

  it('failed watches count toward the same backoff; a long healthy watch between failures does not reset it before 2 minutes', async function () {
    // Each watch lasts 90 s before it fails: under 2 minutes since the last step, so it keeps growing.
    const s = scripted(['fail', 'fail', 'fail'], 90_000);
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 1_600, 3_200]);
  });

  it('a failure after more than 2 minutes without one waits the first step again', async function () {
    const s = scripted(['fail', 'fail', 'fail'], 121_000);
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 800, 800]);
  });

  it('watches the server closes normally take no step: the next failure continues from where the backoff was', async function () {
    const s = scripted(['fail', 'fail', { kind: 'closed', events: 3 }, { kind: 'closed', events: 2 }, 'fail']);
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 1_600, 3_200]);
  });

  // Retry-After is a floor on that one wait; it takes one step of the schedule like any failure.
  it('a failure answered with Retry-After waits no less than the server asked, and the next failure goes on with the steps', async function () {
    const tooMany = KubeApiError.fromResponse(429, JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests' }), '30');
    const s = scripted(['fail', tooMany, 'fail']);
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 30_000, 3_200]);
    expect(s.reported, 'the waits logged are the waits taken').to.deep.equal([800, 30_000, 3_200]);
  });

  // The short-watch wait is the first step, never a grown one: a grown one was seen to leave a new
  // informer blind for a minute on a busy API server (list-watch-loop.ts).
  it('a short watch with nothing in it waits the first step, not the one failures grew', async function () {
    const s = scripted(['fail', 'fail', 'fail', 'fail', { kind: 'closed', events: 0 }]);
    await s.done;
    expect(s.sleeps).to.deep.equal([800, 1_600, 3_200, 6_400, 800]);
  });
});
