import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { LeaderElector } from '../../src/leaderelection/leader-elector.js';
import type { LeaderElectionConfig } from '../../src/leaderelection/leader-elector.js';
import type { Lease } from '../../src/types/wire.js';

/** A Lease store behind the three calls the elector makes; `onGet` may change the stored Lease first. */
function leaseStore(onGet: (lease: Lease | undefined) => Lease | undefined = (l) => l): { client: KubeClient; gets: () => number; set: (l: Lease | undefined) => void; get: () => Lease | undefined } {
  let lease: Lease | undefined;
  let rv = 0;
  let gets = 0;
  const stored = (l: Lease): Lease => ({ ...l, metadata: { ...l.metadata, resourceVersion: String(++rv) } });
  const client = {
    get: () => {
      gets++;
      lease = onGet(lease);
      return lease ? Promise.resolve(lease) : Promise.reject(new KubeApiError(404, { reason: 'NotFound' }));
    },
    create: (_r: unknown, obj: Lease) => {
      if (lease) return Promise.reject(new KubeApiError(409, { reason: 'AlreadyExists' }));
      lease = stored(obj);
      return Promise.resolve(lease);
    },
    replace: (_r: unknown, obj: Lease) => {
      if (obj.metadata?.resourceVersion !== lease?.metadata?.resourceVersion) return Promise.reject(new KubeApiError(409, { reason: 'Conflict' }));
      lease = stored(obj);
      return Promise.resolve(lease);
    },
  } as unknown as KubeClient;
  return { client, gets: () => gets, set: (l) => (lease = l ? stored(l) : undefined), get: () => lease };
}

const config = (identity: string): LeaderElectionConfig => ({ namespace: 'ns', name: 'l', identity, leaseDurationMs: 600, renewDeadlineMs: 2_000, retryPeriodMs: 100 });
const heldBy = (holderIdentity: string): Lease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'l', namespace: 'ns' },
  spec: { holderIdentity, leaseDurationSeconds: 1, acquireTime: new Date().toISOString(), renewTime: new Date().toISOString(), leaseTransitions: 0 },
});

describe('LeaderElector: what counts as a renewal, and when a leader steps down', function () {
  this.timeout(20_000);

  it('a dead leader\'s lease whose metadata keeps changing (labels, annotations) is taken over: only the election record counts', async function () {
    // Someone writes a label on the Lease before every read: a new resourceVersion each time, the record unchanged.
    let n = 0;
    const store = leaseStore((l) => (l && l.spec?.holderIdentity === 'dead' ? { ...l, metadata: { ...l.metadata, resourceVersion: `label-${++n}`, labels: { touched: String(n) } } } : l));
    store.set(heldBy('dead'));
    const started = new Promise<void>((resolve) => {
      const e = new LeaderElector(store.client, config('me'), { onStartedLeading: resolve, onStoppedLeading: () => undefined });
      void e.run();
      after(() => e.stop());
    });
    await started;
    expect(store.get()?.spec?.holderIdentity).to.equal('me');
    expect(n, 'the metadata churned meanwhile').to.be.greaterThan(1);
  });

  it('a leader that finds another identity holding a renewed lease stops at once, not after the renew deadline', async function () {
    const store = leaseStore();
    let getsAtTheft = 0;
    const lost = new Promise<string>((resolve) => {
      const e = new LeaderElector(store.client, config('me'), {
        onStartedLeading: () => {
          // Taken over (a frozen leader resumed, a hand edit): the new holder renewed it.
          store.set(heldBy('other'));
          getsAtTheft = store.gets();
        },
        onStoppedLeading: resolve,
      });
      void e.run();
      after(() => e.stop());
    });
    expect(await lost).to.equal('lost');
    // One look at the Lease: with retries every 100 ms until a 2 s renew deadline it would take about twenty.
    expect(store.gets() - getsAtTheft).to.equal(1);
    expect(store.get()?.spec?.holderIdentity).to.equal('other');
  });

  it('a refused lease write (a policy on Leases, a role without the verb) is said at warn, once while the same refusal repeats; a Conflict stays at debug', async function () {
    const refused = new KubeApiError(403, { reason: 'Forbidden', message: 'leases.coordination.k8s.io "l" is forbidden: User "system:serviceaccount:x:y" cannot create resource "leases"' });
    let creates = 0;
    const client = {
      get: () => Promise.reject(new KubeApiError(404, { reason: 'NotFound' })),
      create: () => (creates++, Promise.reject(creates === 1 ? new KubeApiError(409, { reason: 'AlreadyExists' }) : refused)),
    } as unknown as KubeClient;
    const e = new LeaderElector(client, config('me'), { onStartedLeading: () => undefined, onStoppedLeading: () => undefined });
    const said: { level: string; message: string; fields: Record<string, unknown> }[] = [];
    const log = (e as unknown as { log: Record<string, unknown> }).log;
    for (const level of ['warn', 'debug']) log[level] = (message: string, fields: Record<string, unknown>) => said.push({ level, message, fields });
    void e.run();
    try {
      // Four tries or more, however slow the machine: the first (a Conflict), then refusals.
      while (creates < 4) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await e.stop();
    }
    const warned = said.filter((l) => l.level === 'warn' && l.message.startsWith('the API server refused'));
    expect(warned.map((l) => [l.message, l.fields.errorKind])).to.deep.equal([['the API server refused the lease create: no replica can lead while it does', 'Forbidden']]);
    expect(said.filter((l) => l.level === 'debug' && l.fields.errorKind === 'Forbidden').length, 'the repeats').to.be.greaterThan(1);
    expect(said[0]).to.include({ level: 'debug' });
  });

  it('credentials the API server no longer accepts (401) are said at warn too', async function () {
    let creates = 0;
    const client = {
      get: () => Promise.reject(new KubeApiError(404, { reason: 'NotFound' })),
      create: () => (creates++, Promise.reject(new KubeApiError(401, { reason: 'Unauthorized', message: 'Unauthorized' }))),
    } as unknown as KubeClient;
    const e = new LeaderElector(client, config('me'), { onStartedLeading: () => undefined, onStoppedLeading: () => undefined });
    const warned: string[] = [];
    const log = (e as unknown as { log: Record<string, unknown> }).log;
    log.warn = (message: string) => warned.push(message);
    log.debug = () => undefined;
    void e.run();
    try {
      while (creates < 2) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await e.stop();
    }
    expect(warned.filter((m) => m.startsWith('the API server refused'))).to.deep.equal(['the API server refused the lease create: no replica can lead while it does']);
  });
});
