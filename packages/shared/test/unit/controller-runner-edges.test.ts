import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { Controller } from '../../src/controller/controller.js';
import { DONE, requeueAfter } from '../../src/controller/result.js';
import { aborted, sleep, waitAtMost } from '../../src/controller/runnable.js';
import type { Runnable } from '../../src/controller/runnable.js';
import { RunnableGroup } from '../../src/controller/runnable-group.js';
import type { Result } from '../../src/controller/result.js';
import { TerminalError } from '../../src/controller/terminal-error.js';
import { ItemExponentialBackoff } from '../../src/ratelimit/item-backoff.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { metricSeries, recordingController, settle, stringController } from './controller-fixtures.js';

// Edges of the shared controller runner that a mutation run found no unit test for: how many
// workers a controller gets, the metrics series it publishes, the start signal, re-sync periods.

/** A controller whose reconciles wait on a gate; `inFlight` counts those under way, `most` the most at once. */
function gated(prefix: string, workers: number | undefined): { c: Controller<string>; open: () => void; stats: { inFlight: number; most: number; done: number } } {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => (open = r));
  const stats = { inFlight: 0, most: 0, done: 0 };
  const c = stringController(
    prefix,
    async () => {
      stats.inFlight++;
      stats.most = Math.max(stats.most, stats.inFlight);
      await gate;
      stats.inFlight--;
      stats.done++;
      return DONE;
    },
    workers === undefined ? {} : { workers },
  );
  return { c, open, stats };
}

describe('Controller runner edges', function () {
  describe('workers', function () {
    const cases: [string, number | undefined, number][] = [
      ['unset: one worker (controller-runtime MaxConcurrentReconciles defaults to 1)', undefined, 1],
      ['0: still one worker, never none', 0, 1],
      ['negative: one worker', -3, 1],
      ['3: three at once', 3, 3],
    ];
    for (const [what, workers, want] of cases) {
      it(`${what}`, async function () {
        const { c, open, stats } = gated('workers', workers);
        const name = c.name;
        void c.start();
        for (let i = 0; i < 5; i++) c.enqueue(`k${i}`);
        await settle();
        expect(stats.inFlight, 'reconciles under way at once').to.equal(want);
        expect(await metricSeries('controller_runtime_max_concurrent_reconciles', { controller: name })).to.equal(want);
        expect(await metricSeries('controller_runtime_active_workers', { controller: name })).to.equal(want);
        open();
        for (let i = 0; i < 5 && stats.done < 5; i++) await settle();
        expect(stats.done, 'every key reconciled').to.equal(5);
        expect(stats.most).to.equal(want);
        expect(await metricSeries('controller_runtime_active_workers', { controller: name }), 'idle again').to.equal(0);
        await c.stop(1_000);
      });
    }

    it('publishes active_workers 0 and the worker count from construction, before any start', async function () {
      const c = stringController('gauges-before-start', () => Promise.resolve(DONE), { workers: 2 });
      const name = c.name;
      expect(await metricSeries('controller_runtime_active_workers', { controller: name })).to.equal(0);
      expect(await metricSeries('controller_runtime_max_concurrent_reconciles', { controller: name })).to.equal(2);
      await c.stop(1_000);
    });
  });

  it('reconcile_time_seconds has controller-runtime\'s buckets, then 90 s, 180 s and 360 s', async function () {
    const c = stringController('buckets', () => Promise.resolve(DONE));
    const name = c.name;
    void c.start();
    c.enqueue('k');
    await settle();
    const m = await metricsRegistry.getSingleMetric('controller_runtime_reconcile_time_seconds')?.get();
    const count = (m?.values ?? []).find((v) => v.labels.controller === name && 'metricName' in v && v.metricName === 'controller_runtime_reconcile_time_seconds_count');
    expect(count?.value, 'one reconcile timed').to.equal(1);
    const les = (m?.values ?? []).filter((v) => v.labels.controller === name && v.labels.le !== undefined).map((v) => String(v.labels.le));
    expect(les).to.deep.equal(
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 90, 180, 360]
        .map(String)
        .concat('+Inf'),
    );
    await c.stop(1_000);
  });

  describe('isRunning', function () {
    it('false before start, true while the workers run, false once stopped', async function () {
      const c = stringController('is-running', () => Promise.resolve(DONE));
      expect(c.isRunning(), 'before start').to.equal(false);
      void c.start();
      expect(c.isRunning(), 'started').to.equal(true);
      await c.stop(1_000);
      expect(c.isRunning(), 'stopped').to.equal(false);
    });

    it('false when stopped before it ever started', async function () {
      const c = stringController('is-running-never', () => Promise.resolve(DONE));
      await c.stop(1_000);
      void c.start();
      expect(c.isRunning()).to.equal(false);
    });
  });

  it('an abort of the start signal abandons the reconcile in flight (its signal aborts) and takes no further key', async function () {
    let signal: AbortSignal | undefined;
    const seen: string[] = [];
    const c = stringController('start-signal', (ctx, key) => {
      seen.push(key);
      signal = ctx.signal;
      return new Promise<never>(() => undefined);
    });
    const halt = new AbortController();
    void c.start(halt.signal);
    c.enqueue('a');
    await settle();
    expect(signal?.aborted).to.equal(false);
    halt.abort();
    expect(signal?.aborted, 'the reconcile’s signal').to.equal(true);
    expect(c.isRunning()).to.equal(false);
    c.enqueue('b');
    await settle();
    expect(seen).to.deep.equal(['a']);
  });

  it('re-syncs with a period of 1 ms (any positive period)', async function () {
    const clock = new FakeClock();
    const { c, seen } = recordingController('resync-1ms', clock);
    c.resyncEvery(1, () => ['a']);
    void c.start();
    clock.advance(1);
    await settle();
    expect(seen).to.deep.equal(['1:a']);
    await c.stop(1_000);
  });
  describe('the re-sync timer ends with the workers', function () {
    /** A controller that re-syncs every second on its own fake clock, counting its key walks. */
    function resyncing(prefix: string): { c: Controller<string>; clock: FakeClock; walks: () => number } {
      const clock = new FakeClock();
      let walks = 0;
      const c = stringController(prefix, () => Promise.resolve(DONE), { clock });
      c.resyncEvery(1_000, () => {
        walks++;
        return ['a'];
      });
      return { c, clock, walks: () => walks };
    }

    it('stop cancels it: no timer left, and the loop\'s key walk is not called again', async function () {
      const { c, clock, walks } = resyncing('resync-stop');
      void c.start();
      clock.advance(1_000);
      await settle();
      expect(walks()).to.equal(1);
      await c.stop(1_000);
      expect(clock.pendingTimers(), 'timers left after stop').to.equal(0);
      clock.advance(10_000);
      expect(walks(), 'walks after stop').to.equal(1);
    });

    it('an abort of the start signal cancels it too', async function () {
      const { c, clock, walks } = resyncing('resync-halt');
      const halt = new AbortController();
      void c.start(halt.signal);
      await settle();
      halt.abort();
      expect(clock.pendingTimers(), 'timers left after the abort').to.equal(0);
      clock.advance(10_000);
      expect(walks()).to.equal(0);
    });
  });
  it('hands each reconcile its controller name, a fresh reconcile ID, a logger and the abort signal', async function () {
    const got: { controller: string; id: string; hasLog: boolean; aborted: boolean }[] = [];
    const c = stringController('context', (ctx) => {
      got.push({ controller: ctx.controller, id: ctx.reconcileId, hasLog: typeof ctx.log?.info === 'function', aborted: ctx.signal.aborted });
      return Promise.resolve(DONE);
    });
    void c.start();
    c.enqueue('a');
    c.enqueue('b');
    await settle();
    expect(got.map((g) => [g.controller, g.hasLog, g.aborted])).to.deep.equal([
      [c.name, true, false],
      [c.name, true, false],
    ]);
    for (const g of got) expect(g.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(got[0]!.id).to.not.equal(got[1]!.id);
    await c.stop(1_000);
  });
  describe('a Result\'s requeueAfterMs', function () {
    // [requeueAfterMs, when the key is reconciled again within 10 s (none: never)]
    const cases: [string, Result, number[]][] = [
      ['0: done, not a requeue at once', { requeueAfterMs: 0 }, [0]],
      ['negative: done', { requeueAfterMs: -5 }, [0]],
      ['1 ms: requeued after 1 ms', { requeueAfterMs: 1 }, [0, 1]],
      ['absent: done', {}, [0]],
    ];
    for (const [what, result, want] of cases) {
      it(what, async function () {
        const clock = new FakeClock();
        const at: number[] = [];
        const c = stringController('requeue-after',
          () => {
            at.push(clock.now());
            return Promise.resolve(at.length === 1 ? result : DONE);
          },
          { clock },
        );
        void c.start();
        c.enqueue('k');
        for (let i = 0; i < 10; i++) {
          await settle();
          clock.advance(1);
        }
        clock.advance(10_000);
        await settle();
        expect(at).to.deep.equal(want);
        await c.stop(1_000);
      });
    }
  });

  it('a terminal error after retried failures resets the key\'s backoff (the next failure starts from the base delay)', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = stringController('terminal-forget',
      () => {
        calls++;
        return Promise.reject(calls < 3 ? new Error('transient') : new TerminalError('malformed'));
      },
      { clock, rateLimiter: new ItemExponentialBackoff<string>(5, 1_000_000) },
    );
    void c.start();
    c.enqueue('k');
    for (let i = 0; i < 100 && calls < 3; i++) {
      await settle();
      clock.advance(5);
    }
    await settle();
    expect(calls).to.equal(3);
    expect(c.queue.numRequeues('k')).to.equal(0);
    await c.stop(1_000);
  });
  describe('a failure is retried after the server\'s Retry-After when it gave one, else after the key\'s backoff (5 ms here)', function () {
    // [the error, when the failed key is reconciled again]
    const cases: [string, () => Error, number][] = [
      ['429 with Retry-After 3 s', () => new KubeApiError(429, { reason: 'TooManyRequests' }, 3), 3_000],
      ['429 with Retry-After 1 s', () => new KubeApiError(429, { reason: 'TooManyRequests' }, 1), 1_000],
      ['429 with Retry-After 0: the backoff', () => new KubeApiError(429, { reason: 'TooManyRequests' }, 0), 5],
      ['500 without Retry-After: the backoff', () => new KubeApiError(500, { reason: 'InternalError' }), 5],
      ['a plain error: the backoff', () => new Error('boom'), 5],
    ];
    for (const [what, err, want] of cases) {
      it(what, async function () {
        const clock = new FakeClock();
        const at: number[] = [];
        const c = stringController('retry-after',
          () => {
            at.push(clock.now());
            return at.length === 1 ? Promise.reject(err()) : Promise.resolve(DONE);
          },
          { clock, rateLimiter: new ItemExponentialBackoff<string>(5, 1_000_000) },
        );
        void c.start();
        c.enqueue('k');
        await settle();
        clock.advance(want - 1);
        await settle();
        expect(at, 'not before').to.deep.equal([0]);
        clock.advance(1);
        await settle();
        expect(at).to.deep.equal([0, want]);
        await c.stop(1_000);
      });
    }
  });
  describe('RunnableGroup', function () {
    /** A Runnable that counts its starts and keeps the signal it was started with; `stops` says whether its stop ends it in time. */
    function counting(name: string, stops = true): Runnable & { starts: number; signal?: AbortSignal } {
      const r: Runnable & { starts: number; signal?: AbortSignal } = {
        name,
        starts: 0,
        start(signal) {
          r.starts++;
          r.signal = signal;
          return new Promise<void>(() => undefined);
        },
        stop: () => Promise.resolve(stops),
      };
      return r;
    }

    it('starts each runnable once, however often it is told to start', function () {
      const a = counting('a');
      const b = counting('b');
      const g = new RunnableGroup([a, b]);
      g.start(true);
      g.start(true);
      g.start(false);
      expect([a.starts, b.starts]).to.deep.equal([1, 1]);
    });

    it('starts nothing once stopped, not even a runnable whose own start would run after its stop', async function () {
      const a = counting('a');
      const g = new RunnableGroup([a]);
      await g.stop(1_000);
      g.start(true);
      expect(a.starts).to.equal(0);
    });

    it('a runnable that does not end in time: stop says false and aborts the signal the runnables were started with', async function () {
      const a = counting('a');
      const stubborn = counting('stubborn', false);
      const g = new RunnableGroup([a, stubborn]);
      g.start(true);
      expect(await g.stop(1_000)).to.equal(false);
      expect(a.signal?.aborted).to.equal(true);
    });

    it('all end in time: stop says true and leaves the signal alone', async function () {
      const a = counting('a');
      const g = new RunnableGroup([a, counting('b')]);
      g.start(true);
      expect(await g.stop(1_000)).to.equal(true);
      expect(a.signal?.aborted).to.equal(false);
    });
  });
  describe('requeueAfter', function () {
    const cases: [number | undefined, Result][] = [
      [1, { requeueAfterMs: 1 }],
      [0.5, { requeueAfterMs: 0.5 }],
      [60_000, { requeueAfterMs: 60_000 }],
      [0, DONE],
      [-1, DONE],
      [Number.NaN, DONE],
      [undefined, DONE],
    ];
    for (const [ms, want] of cases) it(`requeueAfter(${ms}) is ${JSON.stringify(want)}`, () => expect(requeueAfter(ms)).to.deep.equal(want));
  });
  describe('the waits runnables use', function () {
    /** Whether `p` has settled once pending callbacks ran. */
    async function settled(p: Promise<unknown>): Promise<boolean> {
      let done = false;
      void p.then(
        () => (done = true),
        () => (done = true),
      );
      await settle();
      return done;
    }

    it('sleep on a signal that already aborted resolves at once, without a timer of an hour', async function () {
      const ac = new AbortController();
      ac.abort();
      expect(await settled(sleep(3_600_000, ac.signal))).to.equal(true);
      expect(getEventListeners(ac.signal, 'abort'), 'no listener left on the aborted signal').to.have.length(0);
    });

    it('sleep that ran its course leaves no abort listener behind (one per retry would leak)', async function () {
      const ac = new AbortController();
      await sleep(1, ac.signal);
      expect(getEventListeners(ac.signal, 'abort')).to.have.length(0);
    });

    it('aborted: resolves at once on a signal that already aborted, and only on abort otherwise', async function () {
      const gone = new AbortController();
      gone.abort();
      expect(await settled(aborted(gone.signal)), 'already aborted').to.equal(true);
      const live = new AbortController();
      const p = aborted(live.signal);
      expect(await settled(p), 'before the abort').to.equal(false);
      live.abort();
      expect(await settled(p), 'after the abort').to.equal(true);
    });

    it('waitAtMost: work that failed has ended (true), as has work that succeeded', async function () {
      expect(await waitAtMost(Promise.reject(new Error('work failed')), 1_000)).to.equal(true);
      expect(await waitAtMost(Promise.resolve(), 1_000)).to.equal(true);
      expect(await waitAtMost(new Promise<never>(() => undefined), 1)).to.equal(false);
    });

    it('waitAtMost leaves no timer behind once the work ended (a shutdown would otherwise wait out the timeout)', async function () {
      const realSet = globalThis.setTimeout;
      const realClear = globalThis.clearTimeout;
      const pending = new Set<unknown>();
      globalThis.setTimeout = ((fn: () => void, ms?: number) => {
        const t = realSet(() => {
          pending.delete(t);
          fn();
        }, ms);
        pending.add(t);
        return t;
      }) as unknown as typeof setTimeout;
      globalThis.clearTimeout = ((t?: NodeJS.Timeout) => {
        pending.delete(t);
        realClear(t);
      }) as typeof clearTimeout;
      try {
        expect(await waitAtMost(Promise.resolve(), 3_600_000)).to.equal(true);
      } finally {
        globalThis.setTimeout = realSet;
        globalThis.clearTimeout = realClear;
      }
      expect(pending.size, 'timers left').to.equal(0);
    });
  });
});
