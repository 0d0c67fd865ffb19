import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { EventRecorder } from '../../src/events/event-recorder.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import type { Event } from '../../src/types/wire.js';
import { flushDriving } from './event-recorder-fixtures.js';

// What EventRecorder aggregates, keeps apart, forgets and tries again, where it follows client-go's
// recorder (k8s.io/client-go/tools/record). Written from mutation testing of the client.

/** Just what the recorder calls: creates and patches answered by `create` and `patch`, each written down. */
function recorderClient(create: (e: Event, n: number) => Promise<Event>, patch: () => Promise<unknown> = () => Promise.resolve({})): { client: KubeClient; writes: string[]; created: Event[] } {
  const writes: string[] = [];
  const created: Event[] = [];
  let creates = 0;
  const client = {
    create: (_r: unknown, e: Event) => {
      created.push(e);
      writes.push(`create ${e.involvedObject.name} ${e.involvedObject.uid} ${e.reason} ${e.message}`);
      return create(e, ++creates);
    },
    patch: (_r: unknown, name: string, _ns: string, _type: string, body: { count: number }) => {
      writes.push(`patch ${name.split('.')[0]} ${body.count}`);
      return patch();
    },
  } as unknown as KubeClient;
  return { client, writes, created };
}

const claimOf = (name: string, uid: string): KubeObject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'ns', uid } });

describe('EventRecorder: what is aggregated into one Event', function () {
  it('aggregates only the same message: another message for the same object and reason is an Event of its own', async function () {
    // client-go counts up only an identical Event: its key holds the message (getEventKey,
    // tools/record/events_cache.go).
    const { client, writes } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    r.event(claimOf('a', 'u1'), 'Warning', 'ProvisioningFailed', 'no capacity in zone-a');
    r.event(claimOf('a', 'u1'), 'Warning', 'ProvisioningFailed', 'no capacity in zone-b');
    r.event(claimOf('a', 'u1'), 'Warning', 'ProvisioningFailed', 'no capacity in zone-a');
    await r.flush();
    expect(writes).to.deep.equal(['create a u1 ProvisioningFailed no capacity in zone-a', 'create a u1 ProvisioningFailed no capacity in zone-b', 'patch a 2']);
  });

  it('counts up: each repeat patches the count one past the last one written', async function () {
    const { client, writes } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 0; i < 4; i++) r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'waiting');
    await r.flush();
    expect(writes.slice(1)).to.deep.equal(['patch a 2', 'patch a 3', 'patch a 4']);
  });

  it('aggregates per object uid and per reason: a new object of the same name, or another reason, is an Event of its own', async function () {
    // The uid and the reason are part of client-go's Event key too (tools/record/events_cache.go).
    const { client, writes } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'same words');
    r.event(claimOf('a', 'u2'), 'Normal', 'Waiting', 'same words');
    r.event(claimOf('a', 'u2'), 'Normal', 'Provisioning', 'same words');
    await r.flush();
    expect(writes).to.deep.equal(['create a u1 Waiting same words', 'create a u2 Waiting same words', 'create a u2 Provisioning same words']);
  });
});

describe('EventRecorder: what an Event says and where it goes', function () {
  it('a dry-run recorder says the Event was recorded and writes nothing', async function () {
    const { client, writes } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', true, new FakeClock());
    expect(r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'waiting')).to.equal(true);
    await r.flush();
    expect(writes).to.deep.equal([]);
    expect(r.pending()).to.equal(0);
  });

  it('writes what names the object (uid and resourceVersion too), its reporting instance, and at most 1,024 characters of message', async function () {
    // The uid tells the object from a later one of the same name; a long message is cut, not refused.
    const { client, created } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'node-1', false, new FakeClock());
    const obj: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '17' } };
    r.event(obj, 'Warning', 'Long', 'x'.repeat(5000));
    await r.flush();
    const [e] = created;
    expect(e?.involvedObject).to.deep.equal({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '17' });
    expect(e?.reportingInstance).to.equal('node-1');
    expect(e?.message).to.have.length(1024);
  });

  it('without a host, names the component only, as kube-controller-manager\'s controllers do (no source.host, no reportingInstance)', async function () {
    const { client, created } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'persistentvolume-controller', '', false, new FakeClock());
    r.event({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'a', namespace: 'ns', uid: 'u1' } }, 'Normal', 'FailedBinding', 'no volume');
    await r.flush();
    const [e] = created;
    expect(e?.source).to.deep.equal({ component: 'persistentvolume-controller' });
    expect(e?.reportingComponent).to.equal('persistentvolume-controller');
    expect(e?.reportingInstance).to.equal(undefined);
  });

  it('writes the Events of a cluster-scoped object into "default"', async function () {
    // As client-go's makeEvent (tools/record/event.go): an Event needs a namespace, the object has none.
    const { client, created } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    r.event({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv1', uid: 'u1' } }, 'Normal', 'Released', 'released');
    await r.flush();
    expect(created[0]?.metadata.namespace).to.equal('default');
    expect(created[0]?.involvedObject.namespace).to.equal(undefined);
  });
});

describe('EventRecorder: the spam budget per object', function () {
  it('an object made again under the same name (a new uid) has a spam budget of its own', function () {
    // client-go's spam key holds the object's uid (getSpamKey, tools/record/events_cache.go); 25 is its burst.
    const { client } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 0; i < 25; i++) expect(r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', `try ${i}`)).to.equal(true);
    expect(r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'once more')).to.equal(false);
    expect(r.event(claimOf('a', 'u2'), 'Normal', 'Waiting', 'new object')).to.equal(true);
  });

  it('forgets the spam budget of the longest-quiet object past 4,096 objects, never of one still recording', async function () {
    // client-go's spam filter is an LRU of 4,096 objects (maxLruCacheEntries, tools/record/events_cache.go).
    const { client } = recorderClient((e) => Promise.resolve(e));
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    const drain = (o: KubeObject): void => {
      while (r.event(o, 'Normal', 'X', 'x'));
    };
    const others = async (from: number, to: number): Promise<void> => {
      for (let i = from; i < to; i++) {
        r.event(claimOf(`o${i}`, `uo${i}`), 'Normal', 'X', 'x');
        if (i % 500 === 0) await r.flush();
      }
      await r.flush();
    };
    const busy = claimOf('busy', 'ub');
    const quiet = claimOf('quiet', 'uq');
    drain(quiet);
    drain(busy);
    await r.flush();
    // 4,096 objects in all: nothing forgotten yet.
    await others(0, 4094);
    expect(r.event(busy, 'Normal', 'X', 'x'), 'still spent').to.equal(false);
    // Past 4,096: the longest-quiet ones go; busy recorded (was refused) just now and stays.
    await others(4094, 4096);
    expect(r.event(quiet, 'Normal', 'X', 'x'), 'forgotten, so a fresh budget').to.equal(true);
    expect(r.event(busy, 'Normal', 'X', 'x'), 'remembered, still spent').to.equal(false);
    await r.flush();
  });
});

describe('EventRecorder: failed writes', function () {
  it('an aggregating patch the server failed is tried again as a patch, not written as a second Event', async function () {
    const clock = new FakeClock();
    let patches = 0;
    const { client, writes } = recorderClient(
      (e) => Promise.resolve(e),
      () => (++patches === 1 ? Promise.reject(new KubeApiError(500, { message: 'etcd leader changed' })) : Promise.resolve({})),
    );
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'waiting');
    await flushDriving(r, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'Waiting', 'waiting');
    await flushDriving(r, clock);
    expect(writes).to.deep.equal(['create a u1 Waiting waiting', 'patch a 2', 'patch a 2']);
  });

  it('waits half a second before trying a failed write again', async function () {
    // Not at once: an API server that just failed a write is seldom ready a moment later.
    const clock = new FakeClock();
    const { client, writes } = recorderClient((e, n) => (n === 1 ? Promise.reject(new KubeApiError(503, { message: 'unavailable' })) : Promise.resolve(e)));
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'X', 'x');
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await settle();
    expect(writes).to.have.length(1);
    clock.advance(499);
    await settle();
    expect(writes, 'not before 500 ms').to.have.length(1);
    clock.advance(1);
    await settle();
    expect(writes).to.have.length(2);
    await r.flush();
  });

  it('a Conflict on a write is not tried again', async function () {
    // It would conflict again: client-go does not retry a write the server refused (tools/record/event.go).
    const clock = new FakeClock();
    const { client, writes } = recorderClient(() => Promise.reject(new KubeApiError(409, { reason: 'Conflict', message: 'conflict' })));
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'X', 'x');
    await flushDriving(r, clock);
    expect(writes).to.have.length(1);
  });

  it("a name taken at the first try is someone else's Event: not taken as written, nor aggregated into", async function () {
    // Only a retry's AlreadyExists can be our own earlier try that landed.
    const clock = new FakeClock();
    const { client, writes } = recorderClient((e, n) => (n === 1 ? Promise.reject(new KubeApiError(409, { reason: 'AlreadyExists', message: 'exists' })) : Promise.resolve(e)));
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'X', 'x');
    await flushDriving(r, clock);
    r.event(claimOf('a', 'u1'), 'Normal', 'X', 'x');
    await flushDriving(r, clock);
    expect(writes).to.deep.equal(['create a u1 X x', 'create a u1 X x']);
  });
});
