import { expect } from 'chai';
import { WriteFencedError } from '../../src/client/errors.js';
import { Controller, FENCED_RETRY_MS } from '../../src/controller/controller.js';
import { DONE } from '../../src/controller/result.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { ItemExponentialBackoff } from '../../src/ratelimit/item-backoff.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';
import { metric, settle } from './controller-fixtures.js';

// A write the leader-election fence held (LeaderElector.writeFence) was not sent: the key is tried
// again after a fixed pause, counted as a requeue and not as an error, and leaves the rate
// limiter's state alone, so that a woken leader's held keys do not use up the retry budget.
describe('Controller runner: a write held by the leader-election fence', function () {
  it('is tried again after FENCED_RETRY_MS, counted as a requeue, with no error and no backoff booked', async function () {
    const clock = new FakeClock();
    const limiter = new ItemExponentialBackoff<string>(5, 1_000_000);
    const name = 'fenced-test';
    const queue = new WorkQueue<string>(name, { clock, rateLimiter: limiter });
    let calls = 0;
    const c = new Controller<string>(
      name,
      () => {
        calls++;
        return calls < 3 ? Promise.reject(new WriteFencedError('PATCH', '/api/v1/x', 'lease not renewed')) : Promise.resolve(DONE);
      },
      { queue, clock },
    );
    void c.start();
    c.enqueue('k');
    await settle();
    expect(calls).to.equal(1);
    clock.advance(FENCED_RETRY_MS - 1);
    await settle();
    expect(calls, 'not before the pause').to.equal(1);
    for (let i = 0; i < 2; i++) {
      clock.advance(FENCED_RETRY_MS);
      await settle();
    }
    expect(calls).to.equal(3);
    expect(queue.numRequeues('k'), 'no backoff booked').to.equal(0);
    expect(await metric('controller_runtime_reconcile_total', { controller: name, result: 'requeue' })).to.equal(2);
    expect(await metric('controller_runtime_reconcile_total', { controller: name, result: 'success' })).to.equal(1);
    expect(await metric('controller_runtime_reconcile_errors_total', { controller: name })).to.equal(0);
    await c.stop(1000);
  });
});
