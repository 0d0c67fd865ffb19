import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { LeaderElector } from '../../src/leaderelection/leader-elector.js';
import type { Lease } from '../../src/types/wire.js';

/**
 * A stop that comes while the lease is being taken: the write lands at the server (answered, or cut
 * off here after the server had it), and the replica never leads. It must give the lease back, as
 * client-go's Run releases under ReleaseOnCancel; otherwise the next leader waits a whole lease
 * duration for a holder that is gone.
 */
describe('LeaderElector: a stop while the lease is being taken gives it back', function () {
  for (const answered of [true, false]) {
    it(`the create ${answered ? 'answered' : 'cut off by the stop'} after the server stored it: released`, async function () {
      let lease: Lease | undefined;
      let created: () => void = () => undefined;
      const client = {
        get: () => (lease ? Promise.resolve(structuredClone(lease)) : Promise.reject(new KubeApiError(404, { reason: 'NotFound' }))),
        create: (_r: unknown, obj: Lease, opts?: { signal?: AbortSignal }) => {
          // The server stores it at once; the answer waits until the test lets it go (or the stop cuts it off).
          lease = { ...obj, metadata: { ...obj.metadata, resourceVersion: '1' } };
          return new Promise<Lease>((resolve, reject) => {
            created = () => resolve(structuredClone(lease!));
            opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason as Error));
          });
        },
        replace: (_r: unknown, obj: Lease) => {
          lease = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata?.resourceVersion ?? '1') + 1) } };
          return Promise.resolve(structuredClone(lease));
        },
      } as unknown as KubeClient;
      const events: string[] = [];
      const elector = new LeaderElector(
        client,
        { namespace: 'ns', name: 'l', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
        { onStartedLeading: () => events.push('started'), onStoppedLeading: (reason) => events.push(`stopped ${reason}`) },
      );
      void elector.run();
      while (!lease) await new Promise((r) => setTimeout(r, 5));
      // Answered: the answer is on its way as the stop comes (the same turn of the event loop).
      if (answered) created();
      await elector.stop();
      expect(events, 'never led').to.deep.equal([]);
      expect(lease.spec?.holderIdentity, 'given back').to.equal('');
    });
  }

  it('a standby that never wrote the lease does not touch it on stop', async function () {
    const lease: Lease = { metadata: { name: 'l', namespace: 'ns', resourceVersion: '7' }, spec: { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: new Date().toISOString().replace(/Z$/, '000Z') } };
    const writes: string[] = [];
    const client = {
      get: () => Promise.resolve(structuredClone(lease)),
      create: () => (writes.push('create'), Promise.reject(new Error('unexpected'))),
      replace: () => (writes.push('replace'), Promise.reject(new Error('unexpected'))),
    } as unknown as KubeClient;
    const elector = new LeaderElector(client, { namespace: 'ns', name: 'l', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 50 }, { onStartedLeading: () => undefined, onStoppedLeading: () => undefined });
    void elector.run();
    await new Promise((r) => setTimeout(r, 120));
    await elector.stop();
    expect(writes).to.deep.equal([]);
  });
});
