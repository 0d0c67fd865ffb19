import { expect } from 'chai';
import { oncePerTurn } from '../../src/controller/once-per-turn.js';

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('oncePerTurn: calls before the next turn of the event loop run the work once', function () {
  it('many calls in one turn: one run, on the next turn; a call after it runs again', async function () {
    let runs = 0;
    const f = oncePerTurn(() => runs++, () => undefined);
    for (let i = 0; i < 1000; i++) f();
    expect(runs, 'not synchronously').to.equal(0);
    await nextTurn();
    expect(runs).to.equal(1);
    f();
    await nextTurn();
    expect(runs).to.equal(2);
  });

  it('a throw goes to onError (not out of the timer, which would end the process), and later calls still run', async function () {
    const errors: unknown[] = [];
    let fail = true;
    let runs = 0;
    const f = oncePerTurn(() => {
      runs++;
      if (fail) throw new Error('boom');
    }, (err) => errors.push(err));
    f();
    await nextTurn();
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['boom']);
    fail = false;
    f();
    await nextTurn();
    expect(runs).to.equal(2);
    expect(errors).to.have.length(1);
  });
});
