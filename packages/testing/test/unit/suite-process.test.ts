import { expect } from 'chai';
import { SuiteProcess } from '../../src/suite-process.js';

/** A process whose start ends when the test says so. */
function slowStart() {
  const stopped: string[] = [];
  let finish!: () => void;
  let fail!: (err: Error) => void;
  const started = new Promise<{ stop(): Promise<void> }>((resolve, reject) => {
    finish = () => resolve({ stop: () => Promise.resolve(void stopped.push('kcm')) });
    fail = reject;
  });
  return { start: () => started, finish, fail, stopped };
}

describe('SuiteProcess: a process started by a suite hook', function () {
  it('stopped after its start ended: stopped at once', async function () {
    const s = slowStart();
    const p = new SuiteProcess();
    const starting = p.start(s.start);
    s.finish();
    await starting;
    await p.stop();
    expect(s.stopped).to.deep.equal(['kcm']);
  });

  it('stopped while its start is still under way (the hook timed out): stopped once the start ends, not left running', async function () {
    const s = slowStart();
    const p = new SuiteProcess();
    void p.start(s.start);
    // The after hook runs (and may itself give up) before the start ends.
    const stopping = p.stop();
    expect(s.stopped).to.deep.equal([]);
    s.finish();
    await stopping;
    expect(s.stopped).to.deep.equal(['kcm']);
  });

  it('a start that failed: stop has nothing to stop and does not throw; stop without a start neither', async function () {
    const s = slowStart();
    const p = new SuiteProcess();
    p.start(s.start).catch(() => undefined);
    s.fail(new Error('no binary'));
    await p.stop();
    await new SuiteProcess().stop();
    expect(s.stopped).to.deep.equal([]);
  });
});
