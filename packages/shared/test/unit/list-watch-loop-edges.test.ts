import { expect } from 'chai';
import { eventually } from '@topovol/testing';
import { KubeApiError } from '../../src/client/errors.js';
import { runListWatch } from '../../src/informer/list-watch-loop.js';
import type { ListWatchSteps, WatchOutcome } from '../../src/informer/list-watch-loop.js';
import { sleep } from './event-delivery-fixtures.js';

// The list and watch loop driven by hand, on the real clock: what follows a watch cut on purpose,
// a short watch, a 410 answer, a failure. The backoff's schedule is reflector-backoff.test.ts's.

type Step = (signal: AbortSignal) => Promise<WatchOutcome>;

/** Steps whose watches follow a script (then hang until aborted); lists succeed at once. */
class ScriptedSteps implements ListWatchSteps {
  readonly log: string[] = [];
  interruptNext = false;
  constructor(
    readonly backoff: { startMs: number; maxMs: number },
    private readonly script: Step[],
  ) {}

  takeRelistRequest(): boolean {
    return false;
  }
  relistRequested(): boolean {
    return false;
  }
  interrupted(): boolean {
    const i = this.interruptNext;
    this.interruptNext = false;
    return i;
  }
  list(): Promise<void> {
    this.log.push('list');
    return Promise.resolve();
  }
  watch(signal: AbortSignal): Promise<WatchOutcome> {
    this.log.push('watch');
    const step = this.script.shift();
    if (step) return step(signal);
    return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
  }
  restarted(reason: 'gone' | 'error' | 'timeout'): void {
    this.log.push(`restarted ${reason}`);
  }
  failed(kind: string): void {
    this.log.push(`failed ${kind}`);
  }
}

const closed = (events: number): Step => () => Promise.resolve({ kind: 'closed', events });
const failing =
  (err: Error = new Error('connection reset')): Step =>
  () =>
    Promise.reject(err);

describe('list and watch loop edges', function () {
  this.timeout(20_000);
  const loops: { ac: AbortController; done: Promise<void> }[] = [];
  const run = (steps: ScriptedSteps): void => {
    const ac = new AbortController();
    loops.push({ ac, done: runListWatch(ac.signal, steps) });
  };
  afterEach(async function () {
    for (const { ac, done } of loops.splice(0)) {
      ac.abort();
      await done;
    }
  });

  it('a watch that was due a list and was also cut on purpose (a raw observer) is followed by the list', async function () {
    const steps = new ScriptedSteps({ startMs: 10, maxMs: 20 }, [
      () => {
        steps.interruptNext = true;
        return Promise.resolve({ kind: 'relist', why: 'gone' });
      },
    ]);
    run(steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch', 'list', 'watch']), 10_000, 10);
  });

  it('a watch cut on purpose is no failure and no restart: the next watch comes without a backoff step', async function () {
    const steps = new ScriptedSteps({ startMs: 60_000, maxMs: 60_000 }, [
      () => {
        steps.interruptNext = true;
        return Promise.resolve({ kind: 'closed', events: 0 });
      },
      (signal) => {
        steps.interruptNext = true;
        return failing()(signal);
      },
    ]);
    run(steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch', 'watch', 'watch']), 10_000, 10);
  });

  // reflector.go waits only after a "very short watch" with no events; one that carried events is
  // a watch the server ended on its timeout.
  it('a short watch that carried events is watched again at once', async function () {
    const steps = new ScriptedSteps({ startMs: 60_000, maxMs: 60_000 }, [closed(3)]);
    run(steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch', 'restarted timeout', 'watch']), 10_000, 10);
  });

  // reflector.go: an expired resourceVersion, as an HTTP status of the watch request as well as an
  // ERROR event, can only be followed by a list.
  it('a watch answered 410 Gone (an HTTP status, not an event) is followed by a list', async function () {
    const gone = KubeApiError.fromResponse(410, JSON.stringify({ kind: 'Status', code: 410, reason: 'Gone', message: 'too old resource version' }));
    const steps = new ScriptedSteps({ startMs: 10, maxMs: 20 }, [failing(gone)]);
    run(steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch', 'restarted gone', 'failed Gone', 'list', 'watch']), 10_000, 10);
  });

  // On the real clock: the loop awaits its wait (reflector-backoff.test.ts's fake clock only sees
  // that a wait was asked for).
  it('a failed watch waits its backoff step before the next', async function () {
    const steps = new ScriptedSteps({ startMs: 60_000, maxMs: 60_000 }, [failing()]);
    run(steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch', 'restarted error', 'failed Unknown']), 10_000, 10);
    await sleep(300);
    expect(steps.log.filter((l) => l === 'watch')).to.have.length(1);
  });

  it('stopping the loop while a watch is open is no failure', async function () {
    const steps = new ScriptedSteps({ startMs: 10, maxMs: 20 }, []);
    const ac = new AbortController();
    const done = runListWatch(ac.signal, steps);
    await eventually(() => expect(steps.log).to.deep.equal(['list', 'watch']), 10_000, 10);
    ac.abort();
    await done;
    expect(steps.log).to.deep.equal(['list', 'watch']);
  });
});
