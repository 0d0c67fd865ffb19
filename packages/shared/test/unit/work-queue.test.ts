import { expect } from 'chai';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';

let n = 0;
const queueName = (): string => `unit-wq-${++n}`;

async function metric(name: string, queue: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric(name)?.get();
  return m?.values.find((v) => v.labels.name === queue)?.value ?? 0;
}

describe('WorkQueue', function () {
  it('deduplicates keys that are waiting', async function () {
    const q = new WorkQueue(queueName(), { clock: new FakeClock() });
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.len()).to.equal(2);
    expect([await q.get(), await q.get()]).to.deep.equal(['a', 'b']);
    q.shutDown();
  });

  it('never hands a key to two workers; a re-add while processing is processed once more after done', async function () {
    const q = new WorkQueue(queueName(), { clock: new FakeClock() });
    q.add('a');
    const k = await q.get();
    q.add('a');
    expect(q.len()).to.equal(0);
    let second: string | undefined;
    void q.get().then((x) => (second = x));
    await Promise.resolve();
    expect(second).to.equal(undefined);
    q.done(k!);
    await Promise.resolve();
    expect(second).to.equal('a');
    q.shutDown();
  });

  it('1000 adds while processing lead to at most one more processing', async function () {
    const q = new WorkQueue(queueName(), { clock: new FakeClock() });
    q.add('a');
    const k = (await q.get())!;
    for (let i = 0; i < 1000; i++) q.add('a');
    q.done(k);
    expect(q.len()).to.equal(1);
    q.done((await q.get())!);
    expect(q.len()).to.equal(0);
    q.shutDown();
  });

  it('addAfter delays, keeps the earliest of several, and orders by due time', async function () {
    const clock = new FakeClock();
    const q = new WorkQueue(queueName(), { clock });
    q.addAfter('late', 100);
    q.addAfter('early', 50);
    q.addAfter('late', 500);
    q.addAfter('late', 80);
    clock.advance(49);
    expect(q.len()).to.equal(0);
    clock.advance(31);
    expect(q.len()).to.equal(2);
    expect([await q.get(), await q.get()]).to.deep.equal(['early', 'late']);
    clock.advance(1000);
    expect(q.len()).to.equal(0);
    q.shutDown();
  });

  it('addRateLimited backs off per key and counts retries; forget resets', async function () {
    const clock = new FakeClock();
    const name = queueName();
    const q = new WorkQueue(name, { clock });
    q.addRateLimited('a');
    q.addRateLimited('a');
    expect(q.numRequeues('a')).to.equal(2);
    expect(await metric('workqueue_retries_total', name)).to.equal(2);
    clock.advance(4);
    expect(q.len()).to.equal(0);
    clock.advance(1);
    expect(q.len()).to.equal(1);
    q.forget('a');
    expect(q.numRequeues('a')).to.equal(0);
    expect(await metric('workqueue_adds_total', name)).to.equal(1);
    q.shutDown();
  });

  it('shutDown releases waiting workers with undefined', async function () {
    const q = new WorkQueue(queueName(), { clock: new FakeClock() });
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).to.equal(undefined);
    q.add('x');
    expect(await q.get()).to.equal(undefined);
  });

  it('shutDownWithDrain waits for in-flight keys', async function () {
    const q = new WorkQueue(queueName(), { clock: new FakeClock() });
    q.add('a');
    const k = (await q.get())!;
    let drained = false;
    const p = q.shutDownWithDrain().then(() => (drained = true));
    await Promise.resolve();
    expect(drained).to.equal(false);
    q.done(k);
    await p;
    expect(drained).to.equal(true);
  });
});
