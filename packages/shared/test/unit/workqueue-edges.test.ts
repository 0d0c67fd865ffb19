import { expect } from 'chai';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { FAIR_SHARE } from '../../src/workqueue/fifo.js';
import type { WorkQueue } from '../../src/workqueue/work-queue.js';
import { drainOrder, metric, queueName, queuesShutAfterEach, settle } from './event-delivery-fixtures.js';

// Work queue edges work-queue.test.ts left open: a stray done(), hold() and release(), the delayed
// heap's superseded entries, metrics after idle or during a drain, the fair share between levels.

describe('work queue edges: done(), hold() and metrics', function () {
  const newQueue = queuesShutAfterEach();

  it('a second done() of a key re-added while processing does not queue it twice (two workers would reconcile it at once)', async function () {
    const q = newQueue();
    q.add('a');
    const k = (await q.get())!;
    q.add('a');
    q.done(k); // queued again: it was added while being processed
    q.done(k); // a worker's stray second done
    expect(q.len()).to.equal(1);
    expect(await q.get()).to.equal('a');
    let second: string | undefined;
    void q.get().then((key) => (second = key));
    await settle();
    expect(second, 'no second worker gets a while the first has it').to.equal(undefined);
  });

  it('a done() of a key that is queued but not taken leaves one copy in the queue', async function () {
    const q = newQueue();
    q.add('a');
    q.done('a');
    expect(q.len()).to.equal(1);
    expect(await drainOrder(q)).to.deep.equal(['a']);
  });

  it('metrics keep being published after the queue was idle: adds and depth after a done()', async function () {
    const name = queueName();
    const q = newQueue({}, name);
    q.add('a');
    q.done((await q.get())!);
    q.add('b');
    q.add('c');
    expect(await metric('workqueue_adds_total', name)).to.equal(3);
    expect(await metric('workqueue_depth', name)).to.equal(2);
  });

  it('metrics keep being published while a drain hands out what is still queued', async function () {
    const clock = new FakeClock();
    const name = queueName();
    const q = newQueue({ clock }, name);
    q.add('a');
    await q.shutDownWithDrain(); // nothing in flight: resolves at once, and workers may still take a
    expect(await q.get()).to.equal('a');
    clock.advance(2_000);
    expect(await metric('workqueue_unfinished_work_seconds', name)).to.equal(2);
    q.done('a');
    expect(await metric('workqueue_unfinished_work_seconds', name)).to.equal(0);
  });

  it("hold() while a key is being processed is refused, and that key's re-add is kept", async function () {
    const q = newQueue();
    q.add('a');
    const k = (await q.get())!;
    q.add('a');
    expect(() => q.hold()).to.throw(/hold\(\) while keys are being processed/);
    expect(q.isHeld()).to.equal(false);
    q.done(k);
    expect(await drainOrder(q)).to.deep.equal(['a']);
  });

  it("a delayed add dropped by hold() does not swallow the same key's delayed add after release()", async function () {
    const clock = new FakeClock();
    const q = newQueue({ clock });
    q.addAfter('a', 10);
    q.hold();
    q.release();
    q.addAfter('a', 20);
    clock.advance(20);
    expect(await drainOrder(q)).to.deep.equal(['a']);
  });

  it('addRateLimited while held or shut down counts neither a requeue nor a retry', async function () {
    const name = queueName();
    const q = newQueue({}, name);
    q.hold();
    q.addRateLimited('a');
    q.release();
    q.shutDown();
    q.addRateLimited('a');
    expect(q.numRequeues('a')).to.equal(0);
    expect(await metric('workqueue_retries_total', name)).to.equal(0);
  });
});

describe('work queue edges: delayed adds', function () {
  const queues = queuesShutAfterEach();
  const newQueue = (clock: FakeClock): WorkQueue => queues({ clock });

  it('a delayed add of a key already delayed to the same time keeps its first place among keys due then', async function () {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('a', 10);
    q.addAfter('b', 10);
    q.addAfter('a', 10);
    clock.advance(10);
    expect(await drainOrder(q)).to.deep.equal(['a', 'b']);
  });

  // The earlier due time wins, as in client-go's util/workqueue/delaying_queue.go; the entry it
  // replaced stays in the heap here and must be skipped when its time comes.
  it('a superseded delayed add never fires: the key comes at its live due time, not at the one it replaced', async function () {
    const clock = new FakeClock();
    const q = newQueue(clock);
    q.addAfter('a', 100);
    q.addAfter('a', 50); // supersedes the entry due at 100
    q.addAfter('b', 75);
    clock.advance(50);
    expect(await drainOrder(q)).to.deep.equal(['a']);
    clock.advance(10);
    q.addAfter('a', 100); // due at 160
    clock.advance(15);
    expect(await drainOrder(q)).to.deep.equal(['b']);
    clock.advance(25);
    expect(q.len(), 'at 100, the superseded due time').to.equal(0);
    clock.advance(60);
    expect(await drainOrder(q)).to.deep.equal(['a']);
  });

  it('delayed keys come each at its own due time, whatever order they were added in (the delayed heap keeps its order)', async function () {
    const clock = new FakeClock();
    const q = newQueue(clock);
    // A permutation of 1..60 ms.
    const delays = Array.from({ length: 60 }, (_, i) => ((i * 37) % 60) + 1);
    for (const ms of delays) q.addAfter(`k${ms}`, ms);
    const late: string[] = [];
    for (let t = 1; t <= 60; t++) {
      clock.advance(1);
      const got = await drainOrder(q);
      if (got.join() !== `k${t}`) late.push(`${t} ms: [${got.join()}]`);
    }
    expect(late).to.deep.equal([]);
  });
});

describe('work queue edges: the fair share between priority levels', function () {
  const queues = queuesShutAfterEach();
  /** Claims (pvc/…) at level 0, volumes at level 1, as the binder's queue. */
  const newQueue = (): WorkQueue => queues({ priority: (k: string) => (k.startsWith('pvc/') ? 0 : 1) });

  /** Queues a volume behind 40 claims and takes 41 keys: where the volume came. */
  async function volumeTurnInBurst(q: WorkQueue, first: number): Promise<number> {
    q.add('pv/2');
    for (let i = 0; i < 40; i++) q.add(`pvc/${first + i}`);
    const taken: string[] = [];
    for (let i = 0; i < 41; i++) {
      const k = (await q.get())!;
      taken.push(k);
      q.done(k);
    }
    return taken.indexOf('pv/2');
  }

  it('hold() starts the fair-share count afresh', async function () {
    const q = newQueue();
    q.add('pv/1');
    for (let i = 0; i < 10; i++) q.add(`pvc/${i}`);
    for (let i = 0; i < 10; i++) q.done((await q.get())!);
    q.hold(); // drops pv/1, still waiting
    q.release();
    expect(await volumeTurnInBurst(q, 10)).to.equal(FAIR_SHARE);
  });

  it('the fair-share count starts afresh once no later level waits', async function () {
    const q = newQueue();
    // Ten claims taken while a volume waits, then the volume, taken when no claim is left.
    q.add('pv/1');
    for (let i = 0; i < 10; i++) q.add(`pvc/${i}`);
    expect(await drainOrder(q)).to.have.length(11);
    // A new burst: the waiting volume gets its turn after FAIR_SHARE claims, not fewer.
    expect(await volumeTurnInBurst(q, 10)).to.equal(FAIR_SHARE);
  });
});
