import { expect } from 'chai';
import http, { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { KubeApiError, WriteFencedError } from '../../src/client/errors.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { ServerClock } from '../../src/client/server-clock.js';
import { Resources } from '../../src/informer/resources.js';
import { LeaderElector } from '../../src/leaderelection/leader-elector.js';
import type { LeaderElectionConfig } from '../../src/leaderelection/leader-elector.js';
import type { Lease } from '../../src/types/wire.js';

/**
 * Edges of leader election and its write fence that the neighbouring leader-elector-*.test.ts files
 * leave open. The monotonic clock is moved by hand (a frozen process, a slow answer, a lease aging);
 * only the retry period's sleeps are real, and short.
 */

type Verb = 'get' | 'create' | 'replace';

const T = 1_000_000;
const microNow = (offsetMs = 0): string => new Date(Date.now() + offsetMs).toISOString().replace(/Z$/, '000Z');

function heldBy(holderIdentity: string, leaseDurationSeconds = 15, renewTime = microNow()): Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l', namespace: 'ns' },
    spec: { holderIdentity, leaseDurationSeconds, acquireTime: renewTime, renewTime, leaseTransitions: 0 },
  };
}

/**
 * A Lease store behind the three calls the elector makes. `before[verb]` runs first and may throw
 * (a failed request) or change the store (another writer); `answer[verb]` runs once the write is
 * stored and delays its answer (a slow or stalled request, cut off by the request's signal).
 */
function leaseStore(initial?: Lease) {
  let rv = 0;
  const stored = (l: Lease): Lease => ({ ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++rv) } });
  let lease: Lease | undefined = initial && stored(initial);
  const calls: Record<Verb, number> = { get: 0, create: 0, replace: 0 };
  const before: Partial<Record<Verb, () => void>> = {};
  const answer: Partial<Record<Verb, (signal?: AbortSignal) => Promise<void>>> = {};
  const call = (verb: Verb, signal: AbortSignal | undefined, apply: () => Lease): Promise<Lease> => {
    calls[verb]++;
    let result: Lease;
    try {
      before[verb]?.();
      result = apply();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const wait = answer[verb]?.(signal) ?? Promise.resolve();
    return wait.then(() => structuredClone(result));
  };
  const client = {
    get: (_r: unknown, _name: string, _ns?: string, signal?: AbortSignal) =>
      call('get', signal, () => {
        if (!lease) throw new KubeApiError(404, { reason: 'NotFound' });
        return lease;
      }),
    create: (_r: unknown, obj: Lease, opts?: { signal?: AbortSignal }) =>
      call('create', opts?.signal, () => {
        if (lease) throw new KubeApiError(409, { reason: 'AlreadyExists' });
        return (lease = stored(obj));
      }),
    replace: (_r: unknown, obj: Lease, opts?: { signal?: AbortSignal }) =>
      call('replace', opts?.signal, () => {
        if (obj.metadata?.resourceVersion !== lease?.metadata?.resourceVersion) throw new KubeApiError(409, { reason: 'Conflict' });
        return (lease = stored(obj));
      }),
  } as unknown as KubeClient;
  return {
    client,
    calls,
    before,
    answer,
    lease: (): Lease | undefined => lease,
    /** Another writer's change: a new resourceVersion. */
    set: (l: Lease): void => void (lease = stored(l)),
  };
}

/** A request that hangs until its signal aborts it (a stop, or the renew deadline's cut). */
const hangUntilAborted = (signal?: AbortSignal): Promise<void> =>
  new Promise((_, reject) => signal?.addEventListener('abort', () => reject((signal.reason as Error | undefined) ?? new Error('aborted'))));

async function until(cond: () => boolean, what: string, limitMs = 5_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Lets the elector make at least `n` more reads of the Lease (each one an observation). */
async function reads(store: ReturnType<typeof leaseStore>, n: number): Promise<void> {
  const target = store.calls.get + n;
  await until(() => store.calls.get >= target, `${n} more reads`);
}

function elector(store: ReturnType<typeof leaseStore>, clock: { now: number }, identity: string, cfg: Partial<LeaderElectionConfig> = {}, onStarted: () => void = () => undefined) {
  const events: string[] = [];
  const e = new LeaderElector(
    store.client,
    { namespace: 'ns', name: 'l', identity, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 20, ...cfg },
    {
      onStartedLeading: () => {
        events.push('started');
        onStarted();
      },
      onStoppedLeading: (reason) => void events.push(`stopped ${reason}`),
    },
    () => clock.now,
  );
  return { e, events };
}

describe('LeaderElector.writeFence: measured from when the last successful renewal began', function () {
  this.timeout(20_000);

  it('an acquire whose answer was slow: writes stay open exactly to the renew deadline after the request began, and shut 1 ms later', async function () {
    const clock = { now: T };
    const store = leaseStore();
    // The create is answered 4 s after it was sent; later renewals hang (a frozen API server).
    store.answer.create = () => {
      clock.now += 4_000;
      store.answer.get = hangUntilAborted;
      return Promise.resolve();
    };
    const { e, events } = elector(store, clock, 'me');
    const running = e.run();
    await until(() => e.isLeader(), 'leading');

    clock.now = T + 10_000;
    expect(e.writeFence(), 'at the renew deadline itself: not yet past it').to.equal(undefined);
    clock.now = T + 10_001;
    // A standby may have seen the Lease as soon as it was stored, right after the request began.
    expect(e.writeFence()).to.match(/lease ns\/l last renewed 10001 ms ago, past the renew deadline \(10000 ms\)/);

    store.answer.get = undefined; // the release on stop reads the Lease
    await e.stop();
    await running;
    expect(e.isLeader(), 'released: no longer leading').to.equal(false);
    expect(events).to.deep.equal(['started', 'stopped released']);
    expect(e.writeFence()).to.match(/released or lost/);
  });

  it('a renewal whose answer was slow: the fence counts from the renewal request, not its answer', async function () {
    const clock = { now: T };
    const store = leaseStore();
    // Leading from T; the first renewal begins at T + 5 s and is answered 4 s later; then renewals hang.
    const { e } = elector(store, clock, 'me', {}, () => void (clock.now = T + 5_000));
    store.answer.replace = () => {
      clock.now += 4_000;
      store.answer.replace = undefined;
      store.answer.get = hangUntilAborted;
      return Promise.resolve();
    };
    const running = e.run();
    await until(() => store.calls.replace >= 1 && store.calls.get >= 3, 'one renewal, and the next one hanging');

    clock.now = T + 15_000;
    expect(e.writeFence(), 'renewed at T + 5 s: open to T + 15 s').to.equal(undefined);
    clock.now = T + 15_001;
    expect(e.writeFence()).to.match(/last renewed 10001 ms ago/);

    store.answer.get = undefined; // the release on stop reads the Lease
    await e.stop();
    await running;
  });
});

describe('LeaderElector: stepping down', function () {
  this.timeout(20_000);

  it('a leader that lost its Lease to another identity keeps its writes fenced afterwards', async function () {
    const clock = { now: T };
    const store = leaseStore();
    const { e, events } = elector(store, clock, 'me', {}, () => store.set(heldBy('other')));
    const running = e.run();
    await until(() => events.includes('stopped lost'), 'lost');
    await running;
    expect(e.isLeader()).to.equal(false);
    // A reconcile still in flight must not write beside the new leader.
    expect(e.writeFence()).to.match(/lease ns\/l released or lost/);
    await e.stop();
  });

  it('renewals failing until the renew deadline (not the lease duration) end leadership, and the fence stays shut', async function () {
    const clock = { now: T };
    const store = leaseStore();
    const { e, events } = elector(store, clock, 'me', {}, () => {
      store.before.get = () => {
        throw new KubeApiError(500, { reason: 'InternalError' });
      };
    });
    const running = e.run();
    await until(() => e.isLeader(), 'leading');
    await reads(store, 3); // failed renewals, the renew deadline T + 10 s still ahead
    expect(events).to.deep.equal(['started']);

    clock.now = T + 10_000; // the renew deadline; the lease duration (15 s) is 5 s off
    await until(() => events.includes('stopped lost'), 'lost at the renew deadline');
    await running;
    expect(e.writeFence()).to.match(/released or lost/);
    await e.stop();
  });

  it('a leader that waited out another holder before taking the Lease survives a renewal that fails once', async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('other', 1));
    let failures = 0;
    const { e, events } = elector(store, clock, 'me', {}, () => {
      store.before.get = () => {
        if (failures++ === 0) throw new KubeApiError(500, { reason: 'InternalError' });
      };
    });
    const running = e.run();
    await reads(store, 2); // saw 'other' holding it: not ours to take for 1 s
    expect(e.isLeader()).to.equal(false);
    clock.now = T + 1_000;
    await until(() => e.isLeader(), 'leading');
    const replaces = store.calls.replace;
    await until(() => store.calls.replace >= replaces + 2 || events.includes('stopped lost'), 'renewals after the failed one');
    expect(events, 'one failed read is retried until the renew deadline').to.deep.equal(['started']);
    expect(e.isLeader()).to.equal(true);
    expect(failures).to.be.greaterThan(1);
    await e.stop();
    await running;
  });
});

describe('LeaderElector: when a standby takes the Lease', function () {
  this.timeout(20_000);

  it("takes a held Lease only once the holder's lease duration (not its own) has passed since it saw the record change, to the millisecond", async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('other', 15));
    // Its own lease duration is shorter than the holder's: the holder's leaseDurationSeconds rules.
    const { e } = elector(store, clock, 'me', { leaseDurationMs: 5_000, renewDeadlineMs: 3_000 });
    const running = e.run();
    await reads(store, 2);

    clock.now = T + 14_999;
    await reads(store, 3);
    expect(store.lease()?.spec?.holderIdentity, 'still valid 1 ms before it expires').to.equal('other');
    expect(store.calls.replace + store.calls.create).to.equal(0);

    clock.now = T + 15_000;
    const seen = store.calls.get;
    await until(() => e.isLeader() || store.calls.get > seen + 10, 'taken once expired');
    expect(e.isLeader()).to.equal(true);
    expect(store.lease()?.spec).to.include({ holderIdentity: 'me', leaseTransitions: 1 });
    await e.stop();
    await running;
  });

  it('never takes a Lease whose holder keeps renewing it, however long ago the standby first saw it', async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('other', 15));
    const { e } = elector(store, clock, 'me');
    const running = e.run();
    await reads(store, 2);
    for (let i = 1; i <= 3; i++) {
      clock.now = T + i * 10_000;
      // A live leader's renewal changes renewTime only.
      const l = store.lease()!;
      store.set({ ...l, spec: { ...l.spec, renewTime: microNow(i * 10_000) } });
      await reads(store, 2);
    }
    clock.now = T + 30_000 + 14_999;
    await reads(store, 3);
    expect(store.lease()?.spec?.holderIdentity).to.equal('other');
    expect(store.calls.replace + store.calls.create).to.equal(0);
    await e.stop();
    await running;
    expect(store.calls.replace, 'nothing to give back').to.equal(0);
  });

  it('a change of holder alone (as client-go compares the whole record) restarts the wait', async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('a', 15));
    const { e } = elector(store, clock, 'me');
    const running = e.run();
    await reads(store, 2);
    clock.now = T + 10_000;
    const l = store.lease()!;
    store.set({ ...l, spec: { ...l.spec, holderIdentity: 'b' } });
    await reads(store, 2);
    clock.now = T + 16_000; // 16 s after 'a' was seen, 6 s after 'b' was
    await reads(store, 3);
    expect(store.lease()?.spec?.holderIdentity).to.equal('b');
    expect(store.calls.replace).to.equal(0);
    await e.stop();
    await running;
  });

  it('takes a released Lease (empty holder) at once, without waiting for its 1 s lease to run out', async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('', 1));
    const { e } = elector(store, clock, 'me');
    const running = e.run();
    await until(() => e.isLeader() || store.calls.get > 10, 'leading');
    expect(e.isLeader()).to.equal(true);
    expect(store.lease()?.spec).to.include({ holderIdentity: 'me', leaseTransitions: 0 });
    await e.stop();
    await running;
  });
});

describe('LeaderElector.stop: what it gives back', function () {
  this.timeout(20_000);

  it('a replica that tried to take the Lease and lost the race leaves the winner alone on stop', async function () {
    const clock = { now: T };
    const store = leaseStore();
    // Another replica creates the Lease first: our create is refused.
    store.before.create = () => store.set(heldBy('other'));
    const { e, events } = elector(store, clock, 'me');
    const running = e.run();
    await until(() => store.calls.create >= 1, 'the create');
    await reads(store, 2);
    await e.stop();
    await running;
    expect(events).to.deep.equal([]);
    expect(store.lease()?.spec?.holderIdentity).to.equal('other');
    expect(store.calls.replace).to.equal(0);
  });

  it('a takeover of an existing Lease stored by the server but cut off by the stop is given back', async function () {
    const clock = { now: T };
    const store = leaseStore(heldBy('', 1));
    // The server stores the takeover; its answer never comes before the stop cuts the request off.
    store.answer.replace = (signal) => {
      store.answer.replace = undefined;
      return hangUntilAborted(signal);
    };
    const { e, events } = elector(store, clock, 'me');
    const running = e.run();
    await until(() => store.calls.replace >= 1, 'the takeover');
    expect(store.lease()?.spec?.holderIdentity).to.equal('me');
    await e.stop();
    await running;
    expect(events, 'never led').to.deep.equal([]);
    expect(store.lease()?.spec?.holderIdentity, 'given back').to.equal('');
  });
});

// Against a plain local HTTP server that records what reached it.
describe('KubeClient.withWriteFence: edges', function () {
  let seen: string[];
  let base: KubeClient;
  let close: () => void;

  beforeEach(async function () {
    seen = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { qps: 0, burst: 1 });
    close = () => {
      base.close();
      server.closeAllConnections();
      server.close();
    };
  });
  afterEach(() => close());

  const cm = { metadata: { name: 'a', namespace: 'ns' } };
  const outcome = (p: Promise<unknown>): Promise<unknown> => p.then(() => 'sent', (e: unknown) => e);

  it('is asked again when the write has its socket: shut by then, the write is never sent', async function () {
    let asked = 0;
    const answers = [undefined, 'lease lost meanwhile'];
    const fenced = base.withWriteFence(() => answers[Math.min(asked++, 1)]);
    const err = await outcome(fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {}));
    expect(err).to.be.instanceOf(WriteFencedError);
    expect((err as Error).message).to.contain('not sent: lease lost meanwhile');
    expect(asked).to.equal(2);
    expect(seen).to.deep.equal([]);
  });

  it('a write the fence refuses is refused before any request is opened: the fence is asked once and no connection is made', async function () {
    let opened = 0;
    class CountingAgent extends http.Agent {
      override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
        opened++;
        return super.createConnection(options, callback);
      }
    }
    const agent = new CountingAgent({ keepAlive: true });
    const own = KubeClient.forEndpoint({ server: base.server, agent: () => Promise.resolve(agent), authHeaders: () => Promise.resolve({}) }, { qps: 0, burst: 1 });
    try {
      let asked = 0;
      const fenced = own.withWriteFence(() => {
        asked++;
        return 'lease expired';
      });
      expect(await outcome(fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {}))).to.be.instanceOf(WriteFencedError);
      expect(asked, 'refused at the first ask, not when a socket came').to.equal(1);
      // (nock, loaded by other unit tests, bypasses agents: then only the count above tells.)
      expect(opened).to.equal(0);
      expect(seen).to.deep.equal([]);
    } finally {
      agent.destroy();
    }
  });

  it('fences stack: a write is sent only when every fence of the chain is open', async function () {
    let outer: string | undefined = 'outer shut';
    let inner: string | undefined;
    const fenced = base.withWriteFence(() => outer).withWriteFence(() => inner);
    const patch = (): Promise<unknown> => outcome(fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {}));
    expect(((await patch()) as Error).message).to.contain('not sent: outer shut');
    outer = undefined;
    inner = 'inner shut';
    expect(((await patch()) as Error).message).to.contain('not sent: inner shut');
    inner = undefined;
    expect(await patch()).to.equal('sent');
    expect(seen.map((s) => s.split(' ')[0])).to.deep.equal(['PATCH']);
  });

  it('a client reading the server time into its own clock keeps the fence', async function () {
    const derived = base.withWriteFence(() => 'lease expired').withServerClock(new ServerClock());
    expect(await outcome(derived.create(Resources.configMaps, cm))).to.be.instanceOf(WriteFencedError);
    expect(seen).to.deep.equal([]);
  });
});
