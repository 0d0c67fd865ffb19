import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import { retryOnConflict } from '../../src/client/retry-on-conflict.js';

const conflict = (): KubeApiError => new KubeApiError(409, { reason: 'Conflict', message: 'the object has been modified' });
const notFound = (): KubeApiError => new KubeApiError(404, { reason: 'NotFound', message: 'gone' });

// client-go util/retry/util.go RetryOnConflict: retry only 409 Conflict, a bounded number of times.
describe('retryOnConflict', function () {
  const cases: { name: string; failures: (() => Error)[]; steps: number; want: 'ok' | 'Conflict' | 'NotFound'; attempts: number }[] = [
    { name: 'succeeds at once', failures: [], steps: 5, want: 'ok', attempts: 1 },
    { name: 'retries two conflicts, then succeeds', failures: [conflict, conflict], steps: 5, want: 'ok', attempts: 3 },
    { name: 'gives up after the last step with the conflict', failures: [conflict, conflict, conflict], steps: 3, want: 'Conflict', attempts: 3 },
    { name: 'does not retry other errors', failures: [notFound, conflict], steps: 5, want: 'NotFound', attempts: 1 },
  ];
  for (const c of cases) {
    it(c.name, async function () {
      let attempts = 0;
      const run = retryOnConflict(
        () => {
          const fail = c.failures[attempts++];
          return fail ? Promise.reject(fail()) : Promise.resolve('ok');
        },
        c.steps,
        1,
      );
      const got = await run.then(
        (v) => v,
        (err: KubeApiError) => err.reason ?? 'other',
      );
      expect(got).to.equal(c.want);
      expect(attempts).to.equal(c.attempts);
    });
  }
});
