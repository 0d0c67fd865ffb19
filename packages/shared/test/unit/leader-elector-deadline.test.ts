import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { LeaderElector } from '../../src/leaderelection/leader-elector.js';
import type { Lease } from '../../src/types/wire.js';

/**
 * A renewal whose request stalls (the API server or the network hangs) must not keep a leader
 * leading past the renew deadline: client-go cuts each renewal off at RenewDeadline; without that
 * cut, the request's own timeout (60 s) would decide when the leader steps down, long after a
 * standby may have taken the Lease.
 */
describe('LeaderElector: a stalled renewal ends leadership at the renew deadline', function () {
  this.timeout(20_000);

  it('loses the lease once renewals hang past the renew deadline, and aborts the hanging request', async function () {
    let lease: Lease | undefined;
    let creates = 0;
    const aborted: string[] = [];
    const hang = (what: string, signal?: AbortSignal): Promise<never> =>
      new Promise((_, reject) => {
        signal?.addEventListener('abort', () => {
          aborted.push(what);
          reject(signal.reason as Error);
        });
      });
    const client = {
      get: (_r: unknown, _name: string, _ns?: string, signal?: AbortSignal) => (creates >= 1 ? hang('get', signal) : lease ? Promise.resolve(lease) : Promise.reject(new KubeApiError(404, { reason: 'NotFound' }))),
      create: (_r: unknown, obj: Lease) => {
        lease = { ...obj, metadata: { ...obj.metadata, resourceVersion: '1' } };
        creates++;
        return Promise.resolve(lease);
      },
      replace: (_r: unknown, _obj: Lease, opts?: { signal?: AbortSignal }) => hang('replace', opts?.signal),
    } as unknown as KubeClient;
    const events: string[] = [];
    const stopped = new Promise<string>((resolve) => {
      const elector = new LeaderElector(
        client,
        { namespace: 'ns', name: 'l', identity: 'me', leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 },
        { onStartedLeading: () => events.push('started'), onStoppedLeading: (reason) => resolve(reason) },
      );
      void elector.run();
    });
    expect(await stopped).to.equal('lost');
    expect(events).to.deep.equal(['started']);
    expect(aborted, 'the hanging renewal was cut off').to.include('get');
  });
});
