import { expect } from 'chai';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { ItemExponentialBackoff } from '../../src/ratelimit/item-backoff.js';
import { FAIR_SHARE, LAST_LEVEL, LeveledFifo } from '../../src/workqueue/fifo.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';
import { drainOrder, flush, metric, queueName, queuesShutAfterEach, settle } from './event-delivery-fixtures.js';

/** Runs n workers until get() says the queue is shut down; `work` is each key's processing. */
function runWorkers<K extends string>(q: WorkQueue<K>, n: number, work: (key: K) => Promise<void>): Promise<void> {
  const worker = async (): Promise<void> => {
    for (let key = await q.get(); key !== undefined; key = await q.get()) {
      try {
        await work(key);
      } finally {
        q.done(key);
      }
    }
  };
  return Promise.all(Array.from({ length: n }, worker)).then(() => undefined);
}

describe('WorkQueue', function () {
  const newQueue = queuesShutAfterEach();

  describe('add deduplicates keys that are waiting', function () {
    const cases = [
      { adds: ['a', 'a', 'a'], want: ['a'] },
      { adds: ['a', 'b', 'a', 'c', 'b'], want: ['a', 'b', 'c'] },
      { adds: ['x'], want: ['x'] },
      { adds: [], want: [] },
    ];
    for (const { adds, want } of cases) {
      it(`[${adds.join(',')}] → [${want.join(',')}]`, async function () {
        const q = newQueue();
        for (const k of adds) q.add(k);
        expect(q.len()).to.equal(want.length);
        expect(await drainOrder(q)).to.deep.equal(want);
        expect(q.len()).to.equal(0);
      });
    }
  });

  describe('typed keys are told apart by keyString', function () {
    type Key = { kind: 'item'; item: string } | { kind: 'sync' };
    const keyString = (k: Key): string => (k.kind === 'item' ? `item:${k.item}` : k.kind);
    const typed: WorkQueue<Key>[] = [];
    const typedQueue = (clock = new FakeClock()): WorkQueue<Key> => {
      const q = new WorkQueue<Key>(queueName(), { keyString, clock, rateLimiter: new ItemExponentialBackoff<string>(10, 1_000) });
      typed.push(q);
      return q;
    };
    afterEach(function () {
      for (const q of typed.splice(0)) q.shutDown();
    });

    it('equal keys built apart wait once, and a key added while processing comes back once', async function () {
      const q = typedQueue();
      q.add({ kind: 'item', item: 'a' });
      q.add({ kind: 'sync' });
      q.add({ kind: 'item', item: 'a' });
      expect(q.len()).to.equal(2);
      const first = await q.get();
      expect(first).to.deep.equal({ kind: 'item', item: 'a' });
      q.add({ kind: 'item', item: 'a' });
      q.add({ kind: 'item', item: 'a' });
      expect(q.len()).to.equal(1);
      q.done({ kind: 'item', item: 'a' });
      expect((await drainOrder(q)).map(keyString)).to.deep.equal(['sync', 'item:a']);
    });

    it('delayed adds merge and backoff is counted per keyString', async function () {
      const clock = new FakeClock();
      const q = typedQueue(clock);
      q.addAfter({ kind: 'item', item: 'a' }, 100);
      q.addAfter({ kind: 'item', item: 'a' }, 50);
      q.addRateLimited({ kind: 'item', item: 'b' });
      q.addRateLimited({ kind: 'item', item: 'b' });
      expect(q.numRequeues({ kind: 'item', item: 'b' })).to.equal(2);
      clock.advance(49);
      await settle();
      expect((await drainOrder(q)).map(keyString), 'b after its 10 ms backoff (merged: the earlier of 10 and 20 ms)').to.deep.equal(['item:b']);
      clock.advance(1);
      await settle();
      expect((await drainOrder(q)).map(keyString), 'a once, after the earlier of its delays').to.deep.equal(['item:a']);
      q.forget({ kind: 'item', item: 'b' });
      expect(q.numRequeues({ kind: 'item', item: 'b' })).to.equal(0);
    });
  });

  it('a key whose delay alternates between long and short does not grow the delayed heap (superseded entries are dropped)', async function () {
    const clock = new FakeClock();
    const q = newQueue({ clock });
    // Another key delayed far ahead keeps superseded entries from surfacing at the top.
    q.addAfter('far', 30 * 60_000);
    for (let i = 0; i < 10_000; i++) {
      q.addAfter('k', 60 * 60_000);
      q.addAfter('k', 1);
      clock.advance(1);
      await settle();
      const got = await q.get();
      expect(got).to.equal('k');
      q.done('k');
    }
    expect(q.delayedHeapSize()).to.be.at.most(2 * 2 + 64);
    // Still right: 'far' comes at its time, once.
    clock.advance(30 * 60_000);
    await settle();
    expect(await q.get()).to.equal('far');
  });

  describe('priority: lower levels first, FIFO within a level, dedup unchanged', function () {
    const level = (k: string): number => (k.startsWith('pvc/') ? 0 : 1);
    const cases = [
      { adds: ['pv/1', 'pvc/a', 'pv/2', 'pvc/b'], want: ['pvc/a', 'pvc/b', 'pv/1', 'pv/2'] },
      { adds: ['pv/1', 'pv/1', 'pvc/a', 'pvc/a'], want: ['pvc/a', 'pv/1'] },
      { adds: ['pv/1', 'pv/2'], want: ['pv/1', 'pv/2'] },
    ];
    for (const { adds, want } of cases) {
      it(`[${adds.join(',')}] → [${want.join(',')}]`, async function () {
        const q = newQueue({ priority: level });
        for (const k of adds) q.add(k);
        expect(q.len()).to.equal(want.length);
        expect(await drainOrder(q)).to.deep.equal(want);
      });
    }
  });

  it('a key of any level is handed out, in level order; levels that are not whole numbers in range are clamped, NaN last', function () {
    // A level that indexes no array element (NaN, Infinity) would leave its key queued where shift()
    // never looks; a huge one would make every shift walk that many empty levels.
    const levels: Record<string, number> = { nan: Number.NaN, inf: Infinity, neg: -Infinity, huge: 1e12, minus: -3, half: 0.5, one: 1, last: LAST_LEVEL };
    const fifo = new LeveledFifo<string>((k) => levels[k]!);
    for (const k of Object.keys(levels)) fifo.push(k);
    expect(fifo.length).to.equal(8);
    const out: string[] = [];
    for (let k = fifo.shift(); k !== undefined; k = fifo.shift()) out.push(k);
    expect(out).to.deep.equal(['neg', 'minus', 'half', 'one', 'nan', 'inf', 'huge', 'last']);
    expect(fifo.length).to.equal(0);
  });

  it('priority does not starve: with claims added as fast as they are taken, a waiting volume key is taken after FAIR_SHARE of them', async function () {
    const q = newQueue({ priority: (k: string) => (k.startsWith('pvc/') ? 0 : 1) });
    q.add('pv/1');
    let n = 0;
    for (let i = 0; i < 40; i++) q.add(`pvc/${n++}`);
    const taken: string[] = [];
    for (let i = 0; i < 100 && !taken.includes('pv/1'); i++) {
      const k = (await q.get())!;
      taken.push(k);
      q.done(k);
      q.add(`pvc/${n++}`);
    }
    expect(taken.indexOf('pv/1')).to.equal(FAIR_SHARE);
  });

  it('never hands a key to a second worker while the first has it', async function () {
    const q = newQueue();
    q.add('a');
    const first = await q.get();
    q.add('a');
    q.add('b');
    // The idle worker gets b, not the a that is still being processed.
    expect([first, await q.get(), q.len()]).to.deep.equal(['a', 'b', 0]);
    let third: string | undefined;
    void q.get().then((k) => (third = k));
    await settle(2);
    expect(third).to.equal(undefined);
    q.done('a');
    await settle(2);
    expect(third).to.equal('a');
  });

  it('with concurrent workers and adds: no key is processed twice at once, and every add is followed by a processing', async function () {
    const q = newQueue();
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
    const active = new Set<string>();
    let overlaps = 0;
    let tick = 0;
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    let processings = 0;

    const workers = runWorkers(q, 4, async (k) => {
      processings++;
      if (active.has(k)) overlaps++;
      active.add(k);
      lastStart.set(k, ++tick);
      for (let i = 0; i <= k.charCodeAt(1) % 3; i++) await flush();
      active.delete(k);
    });

    let rnd = 12345;
    for (let i = 0; i < 300; i++) {
      rnd = (rnd * 1103515245 + 12345) % 2 ** 31;
      const k = keys[rnd % keys.length]!;
      q.add(k);
      lastAdd.set(k, ++tick);
      if (i % 3 === 0) await flush();
    }
    await settle();
    await q.shutDownWithDrain();
    await workers;

    expect(overlaps).to.equal(0);
    for (const k of keys) expect(lastStart.get(k) ?? 0, k).to.be.greaterThan(lastAdd.get(k) ?? 0);
    expect(processings).to.be.within(keys.length, 300);
    expect(q.len()).to.equal(0);
  });

  describe('adds while a key is processing cause exactly one more processing', function () {
    for (const readds of [1, 2, 1000]) {
      it(`${readds} re-add(s)`, async function () {
        const q = newQueue();
        const counts = new Map<string, number>();
        q.add('a');
        const workers = runWorkers(q, 3, async (k) => {
          const n = (counts.get(k) ?? 0) + 1;
          counts.set(k, n);
          if (n === 1) for (let i = 0; i < readds; i++) q.add(k);
          await flush();
        });
        await settle();
        await q.shutDownWithDrain();
        await workers;
        expect(counts.get('a')).to.equal(2);
      });
    }

    it('and that re-add waits in no queue slot until done', async function () {
      const q = newQueue();
      q.add('a');
      const k = (await q.get())!;
      for (let i = 0; i < 1000; i++) q.add('a');
      expect(q.len()).to.equal(0);
      q.done(k);
      expect(q.len()).to.equal(1);
      q.done((await q.get())!);
      expect(q.len()).to.equal(0);
    });
  });

  it('isQueued: true from add until a worker takes the key, and again when it is added while being processed', async function () {
    const q = new WorkQueue<string>(queueName());
    expect(q.isQueued('a')).to.equal(false);
    q.add('a');
    expect(q.isQueued('a')).to.equal(true);
    expect(await q.get()).to.equal('a');
    expect(q.isQueued('a'), 'taken').to.equal(false);
    q.add('a');
    expect(q.isQueued('a'), 'added while processing: done() queues it again').to.equal(true);
    q.done('a');
    expect(q.isQueued('a')).to.equal(true);
    q.addAfter('b', 1_000);
    expect(q.isQueued('b'), 'a delayed add is not queued yet').to.equal(false);
    q.shutDown();
  });

  it('hold drops what is queued or delayed and ignores adds until release', async function () {
    const clock = new FakeClock();
    const q = newQueue({ clock });
    q.add('queued');
    q.addAfter('delayed', 10);
    q.hold();
    expect(q.isHeld()).to.equal(true);
    q.add('held');
    q.addAfter('held-later', 5);
    q.addRateLimited('held-failed');
    clock.advance(1_000);
    await settle();
    expect(q.len()).to.equal(0);
    expect(q.isQueued('queued')).to.equal(false);
    q.release();
    q.add('after');
    clock.advance(1_000);
    await settle();
    expect(await drainOrder(q)).to.deep.equal(['after']);
  });

  describe('addAfter', function () {
    type Op = [key: string, ms?: number]; // ms undefined: plain add()
    const cases: { name: string; ops: Op[]; steps: [advance: number, len: number][]; want: string[] }[] = [
      {
        name: 'orders keys by due time',
        ops: [['late', 100], ['early', 50], ['mid', 75]],
        steps: [[49, 0], [1, 1], [25, 2], [24, 2], [1, 3]],
        want: ['early', 'mid', 'late'],
      },
      { name: 'equal due times keep call order', ops: [['b', 10], ['a', 10], ['c', 10]], steps: [[9, 0], [1, 3]], want: ['b', 'a', 'c'] },
      {
        name: 'merges delayed adds of a key, keeping the earliest',
        ops: [['a', 100], ['a', 500], ['a', 80]],
        steps: [[79, 0], [1, 1], [1000, 1]],
        want: ['a'],
      },
      { name: 'a later delayed add does not postpone an earlier one', ops: [['a', 50], ['a', 200]], steps: [[50, 1], [1000, 1]], want: ['a'] },
      { name: 'ms <= 0 adds at once', ops: [['a', 0], ['b', -5]], steps: [[0, 2]], want: ['a', 'b'] },
      { name: 'a delayed add of a queued key is deduplicated', ops: [['a'], ['a', 10]], steps: [[0, 1], [10, 1]], want: ['a'] },
    ];
    for (const { name, ops, steps, want } of cases) {
      it(name, async function () {
        const clock = new FakeClock();
        const q = newQueue({ clock });
        for (const [k, ms] of ops) {
          if (ms === undefined) q.add(k);
          else q.addAfter(k, ms);
        }
        // One timer serves every delayed key.
        expect(clock.pendingTimers()).to.be.at.most(1);
        const lens: number[] = [];
        for (const [ms] of steps) {
          clock.advance(ms);
          lens.push(q.len());
        }
        expect(lens).to.deep.equal(steps.map(([, len]) => len));
        expect(await drainOrder(q)).to.deep.equal(want);
        clock.advance(1_000_000);
        expect([q.len(), clock.pendingTimers()]).to.deep.equal([0, 0]);
      });
    }

    it('a delayed key due while processing is processed once more after done', async function () {
      const clock = new FakeClock();
      const q = newQueue({ clock });
      q.add('a');
      const k = (await q.get())!;
      q.addAfter('a', 10);
      clock.advance(10);
      expect(q.len()).to.equal(0);
      q.done(k);
      expect(await drainOrder(q)).to.deep.equal(['a']);
    });
  });

  describe('addRateLimited', function () {
    it('backs off per key, counts requeues and retries_total; forget resets', async function () {
      const clock = new FakeClock();
      const name = queueName();
      const q = newQueue({ clock }, name);
      q.addRateLimited('a');
      q.addRateLimited('a');
      q.addRateLimited('a');
      q.addRateLimited('b');
      expect([q.numRequeues('a'), q.numRequeues('b'), q.numRequeues('c')]).to.deep.equal([3, 1, 0]);
      expect(await metric('workqueue_retries_total', name)).to.equal(4);
      // The first backoffs (5 ms) are the earliest; the later 10 ms and 20 ms merge into them.
      clock.advance(4);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(q.len()).to.equal(2);
      clock.advance(100);
      expect(await drainOrder(q)).to.deep.equal(['a', 'b']);
      expect(await metric('workqueue_adds_total', name)).to.equal(2);

      q.forget('a');
      expect(q.numRequeues('a')).to.equal(0);
      q.addRateLimited('a');
      clock.advance(5);
      expect(q.len()).to.equal(1);
    });

    it('uses the given rate limiter', function () {
      const clock = new FakeClock();
      const q = newQueue({ clock, rateLimiter: new ItemExponentialBackoff<string>(100, 150) });
      q.addRateLimited('a');
      clock.advance(99);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(q.len()).to.equal(1);
      expect(q.numRequeues('a')).to.equal(1);
    });

    it('caps the default backoff at maxBackoffMs: a key failing for ever is still tried once per cap', async function () {
      const clock = new FakeClock();
      const q = newQueue({ clock, maxBackoffMs: 1_000 });
      for (let i = 0; i < 30; i++) {
        q.addRateLimited('a');
        clock.advance(1_000);
        expect(q.len(), `back after failure ${i + 1}`).to.equal(1);
        q.done((await q.get())!);
      }
      expect(q.numRequeues('a')).to.equal(30);
    });

    it('refuses a maxBackoffMs that is not a positive number, or one given with a rate limiter it would not cap', function () {
      for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => newQueue({ maxBackoffMs: bad }), String(bad)).to.throw(/maxBackoffMs must be a positive number/);
      expect(() => newQueue({ maxBackoffMs: 10, rateLimiter: new ItemExponentialBackoff<string>(1, 100) })).to.throw(/not both/);
    });
  });

  describe('metrics', function () {
    it('tracks depth, adds, queue and work durations, and in-flight work', async function () {
      const clock = new FakeClock();
      const name = queueName();
      const q = newQueue({ clock }, name);
      expect(await metric('workqueue_depth', name)).to.equal(0);
      q.add('a');
      q.add('b');
      q.add('b');
      expect(await metric('workqueue_depth', name)).to.equal(2);
      expect(await metric('workqueue_adds_total', name)).to.equal(2);

      clock.advance(2000);
      await q.get(); // a waited 2 s
      clock.advance(1000);
      await q.get(); // b waited 3 s
      clock.advance(1000);
      // a has been processing for 2 s and b for 1 s; computed when collected.
      expect(await metric('workqueue_unfinished_work_seconds', name)).to.equal(3);
      expect(await metric('workqueue_longest_running_processor_seconds', name)).to.equal(2);
      q.done('a');
      expect(await metric('workqueue_unfinished_work_seconds', name)).to.equal(1);
      expect(await metric('workqueue_longest_running_processor_seconds', name)).to.equal(1);
      q.done('b');

      const h = 'workqueue_queue_duration_seconds';
      expect([await metric(h, name, `${h}_count`), await metric(h, name, `${h}_sum`)]).to.deep.equal([2, 5]);
      const w = 'workqueue_work_duration_seconds';
      expect([await metric(w, name, `${w}_count`), await metric(w, name, `${w}_sum`)]).to.deep.equal([2, 3]);
      expect(await metric('workqueue_depth', name)).to.equal(0);
      expect(await metric('workqueue_unfinished_work_seconds', name)).to.equal(0);
    });

    it('uses exponential buckets from 1e-8 s, ×10, 10 buckets', async function () {
      newQueue();
      const m = await metricsRegistry.getSingleMetric('workqueue_work_duration_seconds')?.get();
      const les = [...new Set(m?.values.map((v) => v.labels.le).filter((le) => le !== undefined && le !== '+Inf'))].map(Number);
      expect(les).to.have.length(10);
      les.forEach((le, i) => expect(le).to.be.closeTo(1e-8 * 10 ** i, 1e-8 * 10 ** i * 1e-9));
    });

    it('publishes nothing when disabled', async function () {
      const name = queueName();
      const q = newQueue({ metrics: false }, name);
      q.add('a');
      q.addRateLimited('b');
      expect(await metric('workqueue_adds_total', name)).to.equal(undefined);
      expect(await metric('workqueue_retries_total', name)).to.equal(undefined);
    });
  });

  describe('shutDown', function () {
    it('releases waiting workers with undefined', async function () {
      const q = newQueue();
      const waiting = [q.get(), q.get()];
      q.shutDown();
      expect(await Promise.all(waiting)).to.deep.equal([undefined, undefined]);
      expect(q.shuttingDown()).to.equal(true);
    });

    it('makes get() resolve undefined even with keys queued, and ignores further adds', async function () {
      const clock = new FakeClock();
      const q = newQueue({ clock });
      q.add('a');
      q.addAfter('later', 10);
      q.shutDown();
      q.add('b');
      q.addAfter('c', 5);
      q.addRateLimited('d');
      expect(clock.pendingTimers()).to.equal(0);
      clock.advance(100);
      expect(await q.get()).to.equal(undefined);
      expect(q.len()).to.equal(1); // only 'a', never handed out
    });
  });

  describe('shutDownWithDrain', function () {
    it('waits until in-flight keys are done, handing out what is still queued', async function () {
      const q = newQueue();
      q.add('a');
      q.add('b');
      q.add('c');
      const a = (await q.get())!;
      const b = (await q.get())!;
      let drained = false;
      const drain = q.shutDownWithDrain().then(() => (drained = true));
      q.add('d'); // ignored while shutting down
      expect(await q.get()).to.equal('c');
      expect(await q.get()).to.equal(undefined);
      q.done(a);
      q.done(b);
      await settle(3);
      expect(drained).to.equal(false);
      q.done('c');
      await drain;
      expect(drained).to.equal(true);
      expect(q.len()).to.equal(0);
    });

    it('is not over while a worker goes straight from done to the next queued key', async function () {
      const q = newQueue();
      q.add('a');
      q.add('b');
      const a = (await q.get())!;
      let drained = false;
      const drain = q.shutDownWithDrain().then(() => (drained = true));
      q.done(a);
      const next = q.get(); // same turn as done, as a worker loop does
      await settle(3);
      expect([await next, drained]).to.deep.equal(['b', false]);
      q.done('b');
      await drain;
      expect(drained).to.equal(true);
    });

    it('resolves at once when nothing is in flight', async function () {
      const q = newQueue();
      q.add('a');
      await q.shutDownWithDrain();
      expect(q.shuttingDown()).to.equal(true);
    });

    it('lets workers finish a key re-added during processing, then stops them', async function () {
      const q = newQueue();
      let processed = 0;
      q.add('a');
      const workers = runWorkers(q, 2, async (k) => {
        processed++;
        if (processed === 1) {
          q.add(k); // dirty before the drain starts: re-queued on done
          void q.shutDownWithDrain();
        }
        await flush();
      });
      await settle();
      await q.shutDownWithDrain();
      await workers;
      expect(processed).to.equal(2);
    });

    it('ends early when shutDown is called meanwhile', async function () {
      const q = newQueue();
      q.add('a');
      await q.get();
      let drained = false;
      const drain = q.shutDownWithDrain().then(() => (drained = true));
      await settle(2);
      expect(drained).to.equal(false);
      q.shutDown();
      await drain;
      expect(drained).to.equal(true);
    });
  });
});
