import { expect } from 'chai';
import { Controller } from '../../src/controller/controller.js';
import { DONE } from '../../src/controller/result.js';
import { runnableFunc } from '../../src/controller/runnable.js';
import type { Runnable } from '../../src/controller/runnable.js';
import { RunnableGroup } from '../../src/controller/runnable-group.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';
import { settle } from './controller-fixtures.js';

/** A runnable that notes in `log` when it starts and when it has stopped. */
function recording(name: string, log: string[], needLeaderElection?: boolean): Runnable {
  return runnableFunc(
    name,
    async (signal) => {
      log.push(`start ${name}`);
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      // A little work after the stop request: the next runnable must wait for it.
      await new Promise((r) => setTimeout(r, 5));
      log.push(`stopped ${name}`);
    },
    needLeaderElection === undefined ? {} : { needLeaderElection },
  );
}

describe('Runnable', function () {
  it('runnableFunc: stop ends the function and reports it ended in time', async function () {
    let ended = false;
    const r = runnableFunc('writer', async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      ended = true;
    });
    const running = r.start(new AbortController().signal);
    await settle();
    expect(ended).to.equal(false);
    expect(await r.stop(1_000)).to.equal(true);
    await running;
    expect(ended).to.equal(true);
  });

  it('runnableFunc: stop reports false for a function that ignores its signal past the timeout', async function () {
    const r = runnableFunc('stubborn', () => new Promise<void>(() => undefined));
    void r.start(new AbortController().signal);
    expect(await r.stop(10)).to.equal(false);
  });

  it('runnableFunc: stopped before start, it never runs', async function () {
    let ran = false;
    const r = runnableFunc('late', () => {
      ran = true;
      return Promise.resolve();
    });
    expect(await r.stop(1_000)).to.equal(true);
    await r.start(new AbortController().signal);
    expect(ran).to.equal(false);
  });

  it('runnableFunc: the start signal (shutdown gave up) aborts the work too', async function () {
    let aborted = false;
    const halt = new AbortController();
    const r = runnableFunc('halted', async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted = true;
    });
    const running = r.start(halt.signal);
    halt.abort();
    await running;
    expect(aborted).to.equal(true);
  });

  describe('RunnableGroup', function () {
    it('starts in order and stops in reverse order, each stop waiting for the one before', async function () {
      const log: string[] = [];
      const g = new RunnableGroup([recording('a', log), recording('b', log), recording('c', log)]);
      g.start(true);
      await settle();
      expect(await g.stop(5_000)).to.equal(true);
      expect(log).to.deep.equal(['start a', 'start b', 'start c', 'stopped c', 'stopped b', 'stopped a']);
    });

    it('before leading starts only the runnables that need no Lease; leading starts the rest once', async function () {
      const log: string[] = [];
      const g = new RunnableGroup([recording('workers', log), recording('everywhere', log, false), recording('writer', log)]);
      g.start(false);
      await settle();
      expect(log).to.deep.equal(['start everywhere']);
      g.start(true);
      g.start(true);
      await settle();
      expect(log).to.deep.equal(['start everywhere', 'start workers', 'start writer']);
      await g.stop(5_000);
    });

    it('stopped before leading: what needs the Lease never starts', async function () {
      const log: string[] = [];
      const g = new RunnableGroup([recording('workers', log), recording('everywhere', log, false)]);
      g.start(false);
      await settle();
      await g.stop(5_000);
      g.start(true);
      await settle();
      expect(log).to.deep.equal(['start everywhere', 'stopped everywhere']);
    });

    it('a controller in a group drains its queue before the runnables started before it stop', async function () {
      const log: string[] = [];
      const queue = new WorkQueue<string>('');
      const c = new Controller<string>(
        'group-drain',
        async (_ctx, key) => {
          await new Promise((r) => setTimeout(r, 10));
          log.push(`reconciled ${key}`);
          return DONE;
        },
        { queue },
      );
      const g = new RunnableGroup([recording('calls-before', log), c]);
      g.start(true);
      queue.add('k');
      await settle();
      expect(await g.stop(5_000)).to.equal(true);
      expect(log).to.deep.equal(['start calls-before', 'reconciled k', 'stopped calls-before']);
    });

    it('reports a runnable whose work failed', async function () {
      const failed: string[] = [];
      const g = new RunnableGroup([runnableFunc('broken', () => Promise.reject(new Error('boom')))], (r, err) => failed.push(`${r.name}: ${(err as Error).message}`));
      g.start(true);
      await settle();
      expect(failed).to.deep.equal(['broken: boom']);
      await g.stop(1_000);
    });
  });
});
