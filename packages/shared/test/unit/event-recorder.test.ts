import { expect } from 'chai';
import type { KubeClient } from '../../src/client/kube-client.js';
import { EventRecorder } from '../../src/events/event-recorder.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import type { Event } from '../../src/types/wire.js';

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

  it('lets 25 Events per object through, then one per 5 minutes, per object (client-go\'s spam filter)', async function () {
    const clock = new FakeClock();
    const { client, writes } = fakeClient();
    const r = new EventRecorder(client, 'test', 'host', false, clock);
    for (let i = 0; i < 40; i++) r.event(claim('busy'), 'Normal', 'ExternalProvisioning', 'waiting');
    r.event(claim('quiet'), 'Normal', 'ExternalProvisioning', 'waiting');
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
});
