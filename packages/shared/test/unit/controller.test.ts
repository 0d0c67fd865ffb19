import { expect } from 'chai';
import { Controller } from '../../src/controller/controller.js';
import type { ReconcileFunc } from '../../src/controller/controller.js';
import { DONE, requeueAfter } from '../../src/controller/result.js';
import { TerminalError } from '../../src/controller/terminal-error.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { ItemExponentialBackoff } from '../../src/ratelimit/item-backoff.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';
import { metric, recordingController, settle, stringController, unique } from './controller-fixtures.js';

/** A loop's typed keys, as the binder's. */
type TestKey = { kind: 'claim'; namespace: string; name: string } | { kind: 'volume'; name: string };
const keyString = (k: TestKey): string => (k.kind === 'claim' ? `pvc/${k.namespace}/${k.name}` : `pv/${k.name}`);

describe('Controller runner', function () {
  it('retries a throwing reconcile with growing delays and counts the retries', async function () {
    const clock = new FakeClock();
    const calls: number[] = [];
    const c = stringController(
      'retry',
      () => {
        calls.push(clock.now());
        return Promise.reject(new Error('boom'));
      },
      { clock, rateLimiter: new ItemExponentialBackoff(5, 1_000_000) },
    );
    void c.start();
    c.enqueue('k');
    for (let i = 0; i < 200; i++) {
      await settle();
      clock.advance(1);
      if (calls.length >= 6) break;
    }
    const gaps = calls.slice(1).map((t, i) => t - calls[i]!);
    expect(gaps).to.deep.equal([5, 10, 20, 40, 80]);
    expect(c.queue.numRequeues('k')).to.be.at.least(5);
    expect(await metric('workqueue_retries_total', { name: c.name })).to.be.at.least(5);
    expect(await metric('controller_runtime_reconcile_errors_total', { controller: c.name })).to.be.at.least(5);
    await c.stop(1000);
  });

  it('does not retry a terminal error', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = stringController(
      'terminal',
      () => {
        calls++;
        return Promise.reject(new TerminalError('malformed'));
      },
      { clock },
    );
    void c.start();
    c.enqueue('k');
    await settle();
    clock.advance(3_600_000);
    await settle();
    expect(calls).to.equal(1);
    expect(c.queue.numRequeues('k')).to.equal(0);
    expect(await metric('controller_runtime_terminal_reconcile_errors_total', { controller: c.name })).to.equal(1);
    expect(await metric('controller_runtime_reconcile_total', { controller: c.name, result: 'error' })).to.equal(1);
    await c.stop(1000);
  });

  it('requeues after the Result’s requeueAfterMs, and not after an empty Result', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = stringController('after', () => Promise.resolve(++calls === 1 ? { requeueAfterMs: 60_000 } : DONE), { clock });
    void c.start();
    c.enqueue('k');
    await settle();
    clock.advance(59_999);
    await settle();
    expect(calls).to.equal(1);
    clock.advance(1);
    await settle();
    expect(calls).to.equal(2);
    clock.advance(3_600_000);
    await settle();
    expect(calls).to.equal(2);
    expect(await metric('controller_runtime_reconcile_total', { controller: c.name, result: 'requeue_after' })).to.equal(1);
    expect(await metric('controller_runtime_reconcile_total', { controller: c.name, result: 'success' })).to.equal(1);
    await c.stop(1000);
  });

  it('a success after failures resets the key’s backoff', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = stringController('reset', () => (++calls < 3 ? Promise.reject(new Error('not yet')) : Promise.resolve(DONE)), {
      clock,
      rateLimiter: new ItemExponentialBackoff(5, 1_000_000),
    });
    void c.start();
    c.enqueue('k');
    for (let i = 0; i < 100 && calls < 3; i++) {
      await settle();
      clock.advance(5);
    }
    await settle();
    expect(calls).to.equal(3);
    expect(c.queue.numRequeues('k')).to.equal(0);
    await c.stop(1000);
  });

  it('reconciles a key added 1,000 times while being processed at most twice', async function () {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const c = stringController(
      'readd',
      async () => {
        calls++;
        if (calls === 1) await gate;
        return DONE;
      },
      { workers: 8 },
    );
    void c.start();
    c.enqueue('k');
    await settle();
    for (let i = 0; i < 1000; i++) c.enqueue('k');
    release();
    await settle();
    expect(calls).to.be.at.most(2).and.at.least(1);
    await c.stop(1000);
  });

  it('never processes one key in two workers at once (8 workers)', async function () {
    const inFlight = new Set<string>();
    let overlaps = 0;
    let maxParallel = 0;
    let done = 0;
    const c = stringController(
      'overlap',
      async (_ctx, key) => {
        if (inFlight.has(key)) overlaps++;
        inFlight.add(key);
        maxParallel = Math.max(maxParallel, inFlight.size);
        await new Promise((r) => setTimeout(r, Math.random() * 3));
        inFlight.delete(key);
        done++;
        return DONE;
      },
      { workers: 8 },
    );
    void c.start();
    for (let round = 0; round < 30; round++) {
      for (let k = 0; k < 20; k++) c.enqueue(`key-${k}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    await c.stop(10_000);
    expect(overlaps).to.equal(0);
    expect(maxParallel).to.be.greaterThan(1).and.at.most(8);
    expect(done).to.be.at.least(20);
  });

  it('stop drains in-flight reconciles', async function () {
    let finished = false;
    const c = stringController('drain', async () => {
      await new Promise((r) => setTimeout(r, 20));
      finished = true;
      return DONE;
    });
    void c.start();
    c.enqueue('k');
    await settle();
    expect(await c.stop(5000)).to.equal(true);
    expect(finished).to.equal(true);
  });

  it('stop leaves queued keys alone (client-go ShutDown): only the reconciles in flight finish', async function () {
    const reconciled: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const c = stringController(
      'leave-queued',
      async (_ctx, key) => {
        await gate;
        reconciled.push(key);
        return DONE;
      },
      { workers: 2 },
    );
    void c.start();
    for (let i = 0; i < 50; i++) c.enqueue(`k${i}`);
    await settle();
    const stopped = c.stop(5000);
    release();
    expect(await stopped).to.equal(true);
    await settle();
    // The two keys the workers held when stop came; the other 48 wait for the next leader's list.
    expect(reconciled.sort()).to.deep.equal(['k0', 'k1']);
  });

  it('stop gives up after its timeout and aborts the reconcile’s signal', async function () {
    let signal: AbortSignal | undefined;
    const c = stringController('abandon', (ctx) => {
      signal = ctx.signal;
      return new Promise<never>(() => undefined);
    });
    void c.start();
    c.enqueue('k');
    await settle();
    expect(await c.stop(10)).to.equal(false);
    expect(signal?.aborted).to.equal(true);
  });

  it('stop before start: the workers never take a key', async function () {
    let calls = 0;
    const c = stringController('never', () => {
      calls++;
      return Promise.resolve(DONE);
    });
    c.enqueue('k');
    expect(await c.stop(1000)).to.equal(true);
    await c.start();
    expect(calls).to.equal(0);
  });

  describe('startKeys: a standby builds no backlog (controller-runtime starts its sources in Start)', function () {
    /** A controller with start keys, whose reconciles record their key; a clock of its own. */
    function withStartKeys(prefix: string, startKeys: () => Iterable<string>): { c: Controller<string>; seen: string[]; queue: WorkQueue<string>; name: string } {
      const seen: string[] = [];
      const name = unique(prefix);
      const clock = new FakeClock();
      const queue = new WorkQueue<string>(name, { clock });
      const c = new Controller<string>(name, (_ctx, key) => {
        seen.push(key);
        return Promise.resolve(DONE);
      }, { queue, clock, startKeys });
      return { c, seen, queue, name };
    }

    it('adds before start (plain, delayed, rate-limited) queue nothing; the workers start with the start keys, then take adds', async function () {
      let cached = ['a', 'b'];
      const { c, seen, queue, name } = withStartKeys('start-keys', () => cached);
      for (let i = 0; i < 1_000; i++) c.enqueue(`gone-${i}`);
      queue.addAfter('later', 5);
      queue.addRateLimited('failed');
      await settle();
      expect(queue.len(), 'nothing waits while held').to.equal(0);
      expect(queue.isQueued('gone-1')).to.equal(false);
      await metricsRegistry.metrics(); // a scrape publishes the depth and the adds
      expect(await metric('workqueue_depth', { name })).to.equal(0);
      expect(await metric('workqueue_adds_total', { name })).to.equal(0);
      cached = ['a', 'b', 'c'];
      void c.start();
      c.enqueue('d');
      await settle();
      expect([...seen].sort()).to.deep.equal(['a', 'b', 'c', 'd']);
      await c.stop(1_000);
    });

    it('a queue with keys in it when the controller is built drops them (the start keys replace them)', async function () {
      const name = unique('start-keys-prequeued');
      const queue = new WorkQueue<string>(name, { clock: new FakeClock() });
      queue.add('before-construction');
      const seen: string[] = [];
      const c = new Controller<string>(name, (_ctx, key) => {
        seen.push(key);
        return Promise.resolve(DONE);
      }, { queue, startKeys: () => ['x'] });
      void c.start();
      await settle();
      expect(seen).to.deep.equal(['x']);
      await c.stop(1_000);
    });

    it('queues every start key before the first is taken, in the queue\'s order; a walk that throws keeps the keys before it', async function () {
      let pulled = 0;
      const name = unique('start-keys-all');
      const queue = new WorkQueue<string>(name, { clock: new FakeClock(), priority: (k) => (k.startsWith('v') ? 1 : 0) });
      const seen: string[] = [];
      const c = new Controller<string>(name, (_ctx, key) => {
        seen.push(key);
        return Promise.resolve(DONE);
      }, { queue, workers: 1, startKeys: function* () {
        for (let i = 0; i < 2_500; i++) {
          pulled++;
          yield i % 2 === 0 ? `v${i}` : `c${i}`;
        }
      } });
      void c.start();
      expect(pulled, 'all at start').to.equal(2_500);
      for (let i = 0; i < 50 && seen.length < 2_500; i++) await settle();
      expect(new Set(seen).size).to.equal(2_500);
      expect(seen.slice(0, 32).every((k) => k.startsWith('c')), 'level 0 first, as queued before the workers took any').to.equal(true);
      await c.stop(1_000);

      const broken = withStartKeys('start-keys-throws', function* () {
        yield 'a';
        throw new Error('a key walk bug');
      });
      void broken.c.start();
      await settle();
      expect(broken.seen).to.deep.equal(['a']);
      await broken.c.stop(1_000);
    });

    it('without startKeys, adds before start are kept (client-go)', async function () {
      const clock = new FakeClock();
      const { c, seen } = recordingController('no-start-keys', clock);
      c.enqueue('early');
      void c.start();
      await settle();
      expect(seen).to.deep.equal(['0:early']);
      await c.stop(1_000);
    });
  });

  it('re-syncs every key of the list once per period while running, and stops at stop', async function () {
    const clock = new FakeClock();
    const { c, seen } = recordingController('resync', clock);
    let keys = ['a', 'b'];
    c.resyncEvery(1_000, () => keys);
    void c.start();
    await settle();
    expect(seen, 'nothing before the first period').to.deep.equal([]);
    clock.advance(1_000);
    await settle();
    keys = ['b', 'c'];
    clock.advance(1_000);
    await settle();
    expect(seen).to.deep.equal(['1000:a', '1000:b', '2000:b', '2000:c']);
    await c.stop(1_000);
    clock.advance(5_000);
    await settle();
    expect(seen, 'no re-sync after stop').to.have.length(4);
  });

  it('walks a long re-sync a slice per turn of the event loop, lazily, and still queues every key once', async function () {
    const clock = new FakeClock();
    const { c, seen } = recordingController('resync-slices', clock);
    let pulled = 0;
    c.resyncEvery(1_000, function* () {
      for (let i = 0; i < 2_500; i++) {
        pulled++;
        yield `k${i}`;
      }
    });
    void c.start();
    clock.advance(1_000);
    expect(pulled, 'one slice in the timer turn, the rest later').to.be.within(1, 1_001);
    for (let i = 0; i < 50 && seen.length < 2_500; i++) await settle();
    expect(pulled).to.equal(2_500);
    expect(seen).to.have.length(2_500);
    expect(new Set(seen).size).to.equal(2_500);
    await c.stop(1_000);
  });

  it('a re-sync walk that throws ends that walk only: the keys before it are queued, and the next period walks again', async function () {
    const clock = new FakeClock();
    const { c, seen } = recordingController('resync-throws', clock);
    c.resyncEvery(1_000, function* () {
      yield 'a';
      throw new Error('a key walk bug');
    });
    void c.start();
    clock.advance(1_000);
    await settle();
    clock.advance(1_000);
    await settle();
    expect(seen).to.deep.equal(['1000:a', '2000:a']);
    await c.stop(1_000);
  });

  it('never re-syncs with a period of 0', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = stringController(
      'no-resync',
      () => {
        calls++;
        return Promise.resolve(DONE);
      },
      { clock },
    );
    c.resyncEvery(0, () => ['a']);
    void c.start();
    clock.advance(60_000);
    await settle();
    expect(calls).to.equal(0);
    await c.stop(1_000);
  });

  describe('typed keys', function () {
    function typedController(reconcile: ReconcileFunc<TestKey>, opts: { clock?: FakeClock; priority?: (k: TestKey) => number } = {}): Controller<TestKey> {
      const name = unique('typed');
      const queue = new WorkQueue<TestKey>(name, { keyString, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.priority ? { priority: opts.priority } : {}) });
      return new Controller<TestKey>(name, reconcile, { queue, ...(opts.clock ? { clock: opts.clock } : {}) });
    }

    it('equal keys built apart are one key; keys of different kinds with one name are two', async function () {
      const seen: TestKey[] = [];
      const c = typedController((_ctx, key) => {
        seen.push(key);
        return Promise.resolve(DONE);
      });
      for (let i = 0; i < 5; i++) {
        c.enqueue({ kind: 'claim', namespace: 'ns', name: 'a' });
        c.enqueue({ kind: 'volume', name: 'a' });
      }
      c.enqueue({ kind: 'claim', namespace: 'other', name: 'a' });
      void c.start();
      await settle();
      expect(seen.map(keyString).sort()).to.deep.equal(['pv/a', 'pvc/ns/a', 'pvc/other/a']);
      expect(seen.find((k) => k.kind === 'claim' && k.namespace === 'ns')).to.deep.equal({ kind: 'claim', namespace: 'ns', name: 'a' });
      await c.stop(1_000);
    });

    it('a typed key is requeued after its Result, and backs off by its keyString', async function () {
      const clock = new FakeClock();
      const calls: string[] = [];
      const c = typedController(
        (_ctx, key) => {
          calls.push(`${clock.now()}:${keyString(key)}`);
          if (key.kind === 'volume') return Promise.reject(new Error('volume write failed'));
          return Promise.resolve(calls.length === 1 ? requeueAfter(30_000) : DONE);
        },
        { clock },
      );
      c.enqueue({ kind: 'claim', namespace: 'ns', name: 'a' });
      void c.start();
      await settle();
      c.enqueue({ kind: 'volume', name: 'v' });
      await settle();
      clock.advance(30_000);
      await settle();
      expect(calls.filter((x) => x.endsWith('pvc/ns/a'))).to.deep.equal(['0:pvc/ns/a', '30000:pvc/ns/a']);
      expect(c.queue.numRequeues({ kind: 'volume', name: 'v' })).to.be.at.least(1);
      expect(c.queue.numRequeues({ kind: 'claim', namespace: 'ns', name: 'a' })).to.equal(0);
      await c.stop(1_000);
    });

    it('hands out keys by the queue’s priority over typed keys', async function () {
      const order: string[] = [];
      const c = typedController(
        (_ctx, key) => {
          order.push(keyString(key));
          return Promise.resolve(DONE);
        },
        { priority: (k) => (k.kind === 'claim' ? 0 : 1) },
      );
      c.enqueue({ kind: 'volume', name: 'v1' });
      c.enqueue({ kind: 'claim', namespace: 'ns', name: 'c1' });
      c.enqueue({ kind: 'volume', name: 'v2' });
      c.enqueue({ kind: 'claim', namespace: 'ns', name: 'c2' });
      void c.start();
      await settle();
      expect(order).to.deep.equal(['pvc/ns/c1', 'pvc/ns/c2', 'pv/v1', 'pv/v2']);
      await c.stop(1_000);
    });

    it('re-syncs typed keys', async function () {
      const clock = new FakeClock();
      const seen: string[] = [];
      const c = typedController(
        (_ctx, key) => {
          seen.push(keyString(key));
          return Promise.resolve(DONE);
        },
        { clock },
      );
      c.resyncEvery(1_000, () => [
        { kind: 'claim', namespace: 'ns', name: 'a' },
        { kind: 'volume', name: 'v' },
      ]);
      void c.start();
      clock.advance(1_000);
      await settle();
      expect(seen.sort()).to.deep.equal(['pv/v', 'pvc/ns/a']);
      await c.stop(1_000);
    });
  });
});
