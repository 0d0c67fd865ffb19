import { expect } from 'chai';
import { CallSlots } from '../../src/source/call-slots.js';

/** A call that finishes (or fails) when the test says so. */
function gate(): { promise: Promise<void>; open: () => void; fail: (e: Error) => void } {
  let open!: () => void;
  let fail!: (e: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('capacity CallSlots: at most N driver calls at once', function () {
  it('runs N calls, queues the rest in order, and starts each waiter as a slot frees', async function () {
    const slots = new CallSlots(2);
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    const done = gates.map((g, i) =>
      slots.run(async () => {
        started.push(i);
        peak = Math.max(peak, ++running);
        await g.promise;
        running--;
        return i;
      }),
    );
    await tick();
    expect(started).to.deep.equal([0, 1]);
    gates[1]!.open();
    await tick();
    expect(started).to.deep.equal([0, 1, 2]);
    gates[0]!.open();
    gates[2]!.open();
    gates[3]!.open();
    expect(await Promise.all(done)).to.deep.equal([0, 1, 2, 3]);
    expect(started).to.deep.equal([0, 1, 2, 3]);
    expect(peak).to.equal(2);
  });

  it('a failed call gives its slot back and its error to its caller', async function () {
    const slots = new CallSlots(1);
    const first = gate();
    const failing = slots.run(() => first.promise);
    const next = slots.run(() => Promise.resolve('next'));
    first.fail(new Error('driver hung up'));
    let err: unknown;
    await failing.catch((e: unknown) => (err = e));
    expect((err as Error).message).to.equal('driver hung up');
    expect(await next).to.equal('next');
    // The slot is free again: a new call starts at once.
    expect(await slots.run(() => Promise.resolve('later'))).to.equal('later');
  });
});
