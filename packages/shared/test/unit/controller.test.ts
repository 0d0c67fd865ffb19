import { expect } from 'chai';
import { Controller } from '../../src/controller/controller.js';
import { TerminalError } from '../../src/controller/terminal-error.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { ItemExponentialBackoff } from '../../src/ratelimit/item-backoff.js';

let n = 0;
const unique = (p: string): string => `${p}-${++n}`;

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const m = await metricsRegistry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}

/** Lets pending promise callbacks (workers) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

describe('Controller runner', function () {
  it('retries a throwing reconcile with growing delays and counts the retries', async function () {
    const clock = new FakeClock();
    const name = unique('retry');
    const calls: number[] = [];
    const c = new Controller(
      name,
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
    expect(await metric('workqueue_retries_total', { name })).to.be.at.least(5);
    expect(await metric('controller_runtime_reconcile_errors_total', { controller: name })).to.be.at.least(5);
    await c.shutdown(1000);
  });

  it('does not retry a terminal error', async function () {
    const clock = new FakeClock();
    const name = unique('terminal');
    let calls = 0;
    const c = new Controller(
      name,
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
    expect(await metric('controller_runtime_terminal_reconcile_errors_total', { controller: name })).to.equal(1);
    expect(await metric('controller_runtime_reconcile_total', { controller: name, result: 'error' })).to.equal(1);
    await c.shutdown(1000);
  });

  it('requeues after the returned delay', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = new Controller(unique('after'), () => Promise.resolve(++calls === 1 ? 60_000 : undefined), { clock });
    void c.start();
    c.enqueue('k');
    await settle();
    clock.advance(59_999);
    await settle();
    expect(calls).to.equal(1);
    clock.advance(1);
    await settle();
    expect(calls).to.equal(2);
    await c.shutdown(1000);
  });

  it('reconciles a key added 1,000 times while being processed at most twice', async function () {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const c = new Controller(
      unique('readd'),
      async () => {
        calls++;
        if (calls === 1) await gate;
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
    await c.shutdown(1000);
  });

  it('never processes one key in two workers at once (8 workers)', async function () {
    const inFlight = new Set<string>();
    let overlaps = 0;
    let maxParallel = 0;
    let done = 0;
    const c = new Controller(
      unique('overlap'),
      async (_ctx, key) => {
        if (inFlight.has(key)) overlaps++;
        inFlight.add(key);
        maxParallel = Math.max(maxParallel, inFlight.size);
        await new Promise((r) => setTimeout(r, Math.random() * 3));
        inFlight.delete(key);
        done++;
      },
      { workers: 8 },
    );
    void c.start();
    for (let round = 0; round < 30; round++) {
      for (let k = 0; k < 20; k++) c.enqueue(`key-${k}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    await c.shutdown(10_000);
    expect(overlaps).to.equal(0);
    expect(maxParallel).to.be.greaterThan(1).and.at.most(8);
    expect(done).to.be.at.least(20);
  });

  it('shutdown drains in-flight reconciles', async function () {
    let finished = false;
    const c = new Controller(unique('drain'), async () => {
      await new Promise((r) => setTimeout(r, 20));
      finished = true;
    });
    void c.start();
    c.enqueue('k');
    await settle();
    expect(await c.shutdown(5000)).to.equal(true);
    expect(finished).to.equal(true);
  });
  it('re-syncs every key of the list once per period while running, and stops at shutdown', async function () {
    const clock = new FakeClock();
    const seen: string[] = [];
    const c = new Controller(
      unique('resync'),
      (_ctx, key) => {
        seen.push(`${clock.now()}:${key}`);
        return Promise.resolve();
      },
      { clock },
    );
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
    await c.shutdown(1_000);
    clock.advance(5_000);
    await settle();
    expect(seen, 'no re-sync after shutdown').to.have.length(4);
  });

  it('never re-syncs with a period of 0', async function () {
    const clock = new FakeClock();
    let calls = 0;
    const c = new Controller(
      unique('no-resync'),
      () => {
        calls++;
        return Promise.resolve();
      },
      { clock },
    );
    c.resyncEvery(0, () => ['a']);
    void c.start();
    clock.advance(60_000);
    await settle();
    expect(calls).to.equal(0);
    await c.shutdown(1_000);
  });
});
