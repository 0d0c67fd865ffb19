import { expect } from 'chai';
import { KubeApiError } from '@topovol/shared';
import { retryDroppedConnection } from '../../src/retry-dropped-connection.js';

const hangUp = (): Error => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('retryDroppedConnection', function () {
  it('repeats a call the server dropped the connection of, and says how often', async function () {
    let calls = 0;
    const r = await retryDroppedConnection(() => (++calls < 3 ? Promise.reject(hangUp()) : Promise.resolve('done')), 5, 1);
    expect(r).to.deep.equal({ value: 'done', retries: 2 });
  });

  it('throws a refusal at once: a 409 or 422 is an answer, not a lost one', async function () {
    let calls = 0;
    const conflict = KubeApiError.fromResponse(409, JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'conflict' }));
    const err = await retryDroppedConnection(() => {
      calls++;
      return Promise.reject(conflict);
    }, 5, 1).catch((e: unknown) => e);
    expect(err).to.equal(conflict);
    expect(calls).to.equal(1);
  });

  it('gives up after the attempts it was given, with the last error', async function () {
    let calls = 0;
    const err = await retryDroppedConnection(() => {
      calls++;
      return Promise.reject(hangUp());
    }, 3, 1).catch((e: unknown) => e);
    expect((err as Error).message).to.equal('socket hang up');
    expect(calls).to.equal(3);
  });
});
