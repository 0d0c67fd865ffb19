import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { EVENT_WRITE_TRIES, EventRecorder, MAX_PENDING_EVENTS } from '../../src/events/event-recorder.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import type { Event } from '../../src/types/wire.js';
import { flushDriving } from './event-recorder-fixtures.js';

/** Just what the recorder calls, counting writes (a unit test of its own rules, not of the API). */
function fakeClient(): { client: KubeClient; writes: string[] } {
  const writes: string[] = [];
  const client = {
    create: (_r: unknown, e: Event) => {
      writes.push(`create ${e.involvedObject.name} ${e.reason}`);
      return Promise.resolve(e);
    },
    patch: (_r: unknown, name: string) => {
      writes.push(`patch ${name.split('.')[0]}`);
      return Promise.resolve({});
    },
  } as unknown as KubeClient;
  return { client, writes };
}

const claim = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'ns', uid: `uid-${name}` } });

describe('EventRecorder', function () {
  it('aggregates a repeated Event into one object whose count grows', async function () {
    const { client, writes } = fakeClient();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 0; i < 3; i++) r.event(claim('a'), 'Normal', 'WaitForFirstConsumer', 'waiting');
    await r.flush();
    expect(writes).to.deep.equal(['create a WaitForFirstConsumer', 'patch a', 'patch a']);
  });

  it('keeps at most 1,000 Events waiting to be written (client-go\'s queue): past it they are dropped, and memory stays bounded', async function () {
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const written: string[] = [];
    const client = {
      create: async (_r: unknown, e: Event) => {
        await gate;
        written.push(e.involvedObject.name ?? '');
        return e;
      },
    } as unknown as KubeClient;
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 0; i < 5000; i++) r.event(claim(`c${i}`), 'Normal', 'WaitForFirstConsumer', 'waiting');
    expect(r.pending()).to.equal(MAX_PENDING_EVENTS);
    release();
    await r.flush();
    expect(r.pending()).to.equal(0);
    expect(written).to.have.length(MAX_PENDING_EVENTS);
    // Room again once they are written.
    r.event(claim('later'), 'Normal', 'WaitForFirstConsumer', 'waiting');
    await r.flush();
    expect(written.at(-1)).to.equal('later');
  });

  it('lets 25 Events per object through, then one per 5 minutes, per object (client-go\'s spam filter)', async function () {
    const clock = new FakeClock();
    const { client, writes } = fakeClient();
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    const recorded: boolean[] = [];
    for (let i = 0; i < 40; i++) recorded.push(r.event(claim('busy'), 'Normal', 'ExternalProvisioning', 'waiting'));
    expect(r.event(claim('quiet'), 'Normal', 'ExternalProvisioning', 'waiting')).to.equal(true);
    // What event() answers is what gets written: callers log only those.
    expect(recorded).to.deep.equal([...Array<boolean>(25).fill(true), ...Array<boolean>(15).fill(false)]);
    await r.flush();
    expect(writes.filter((w) => w.includes('busy'))).to.have.length(25);
    expect(writes.filter((w) => w.includes('quiet'))).to.have.length(1);
    clock.advance(299_000);
    r.event(claim('busy'), 'Warning', 'ClaimLost', 'lost');
    await r.flush();
    expect(writes.filter((w) => w.includes('busy'))).to.have.length(25);
    clock.advance(1_000);
    r.event(claim('busy'), 'Warning', 'ClaimLost', 'lost');
    await r.flush();
    expect(writes.at(-1)).to.equal('create busy ClaimLost');
  });

  /** A client whose creates fail with `code` the first `failures` times. */
  function failingClient(code: number, failures: number): { client: KubeClient; tries: () => number; written: string[] } {
    let tries = 0;
    const written: string[] = [];
    const client = {
      create: (_r: unknown, e: Event) => {
        tries++;
        if (tries <= failures) return Promise.reject(KubeApiError.fromResponse(code, JSON.stringify({ kind: 'Status', code, message: `HTTP ${code}` })));
        written.push(`${e.involvedObject.name} ${e.reason}`);
        return Promise.resolve(e);
      },
    } as unknown as KubeClient;
    return { client, tries: () => tries, written };
  }

  it('writes an Event the API server failed (503, timeouts) on a later try, as client-go retries its Events', async function () {
    const clock = new FakeClock();
    const { client, tries, written } = failingClient(503, 3);
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claim('a'), 'Normal', 'ProvisioningRollback', 'rolling back');
    r.event(claim('b'), 'Normal', 'ProvisioningRollback', 'rolling back');
    await flushDriving(r, clock);
    expect(written, 'both written, in order').to.deep.equal(['a ProvisioningRollback', 'b ProvisioningRollback']);
    expect(tries()).to.equal(5);
  });

  it('a create that landed though its answer was lost (504) is not written twice: the retry finds its name taken', async function () {
    const clock = new FakeClock();
    const stored = new Map<string, Event>();
    let lost = 1;
    const client = {
      create: (_r: unknown, e: Event) => {
        if (stored.has(e.metadata.name!)) return Promise.reject(new KubeApiError(409, { reason: 'AlreadyExists', message: `events "${e.metadata.name}" already exists` }));
        stored.set(e.metadata.name!, e);
        if (lost-- > 0) return Promise.reject(new KubeApiError(504, { reason: 'Timeout', message: 'the server was unable to return a response in the time allotted' }));
        return Promise.resolve(e);
      },
      patch: (_r: unknown, name: string, _ns: string, _t: string, body: { count: number }) => {
        stored.get(name)!.count = body.count;
        return Promise.resolve({});
      },
    } as unknown as KubeClient;
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claim('a'), 'Normal', 'ProvisioningRollback', 'rolling back');
    await flushDriving(r, clock);
    r.event(claim('a'), 'Normal', 'ProvisioningRollback', 'rolling back');
    await flushDriving(r, clock);
    expect([...stored.values()].map((e) => `${e.involvedObject.name} ${e.reason} ${e.count}`), 'one Event, counted twice').to.deep.equal(['a ProvisioningRollback 2']);
  });

  it('gives up after client-go\'s number of tries, and at once on a refusal that cannot pass (422, 403)', async function () {
    for (const [code, failures, want] of [
      [500, 100, EVENT_WRITE_TRIES],
      [422, 100, 1],
      [403, 100, 1],
    ] as const) {
      const clock = new FakeClock();
      const { client, tries, written } = failingClient(code, failures);
      const r = new EventRecorder(client, 'test', 'host', false, clock);
      r.event(claim('a'), 'Warning', 'X', 'x');
      await flushDriving(r, clock);
      expect([code, tries(), written.length]).to.deep.equal([code, want, 0]);
    }
  });
});
