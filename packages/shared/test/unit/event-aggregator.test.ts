import { expect } from 'chai';
import { KubeApiError } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { AGGREGATE_INTERVAL_MS, AGGREGATE_MAX_MESSAGES, COMBINED_PREFIX, EventAggregator } from '../../src/events/event-aggregator.js';
import { EventRecorder } from '../../src/events/event-recorder.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import type { Event } from '../../src/types/wire.js';

/** A client keeping the Events it is given, by name, as the API server would (creates and merge patches). */
function store(): { client: KubeClient; events: Map<string, Event> } {
  const events = new Map<string, Event>();
  const client = {
    create: (_r: unknown, e: Event) => {
      events.set(e.metadata.name!, e);
      return Promise.resolve(e);
    },
    patch: (_r: unknown, name: string, _ns: string, _type: string, body: Partial<Event>) => {
      const had = events.get(name);
      if (!had) return Promise.reject(new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: `events "${name}" not found` }));
      const e = { ...had, ...body };
      events.set(name, e);
      return Promise.resolve(e);
    },
  } as unknown as KubeClient;
  return { client, events };
}

const claim = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'ns', uid: `uid-${name}` } });
const shown = (events: Map<string, Event>): string[] => [...events.values()].map((e) => `${e.reason} x${e.count}: ${e.message}`);

// client-go's EventAggregator (tools/record/events_cache.go): kubectl describe of a busy object
// shows at most 10 Events of one reason within 10 minutes, then one combined Event.
describe('similar Events (one object and reason, different messages), combined as client-go does', function () {
  it('the first nine are written as they are; from the tenth, one combined Event whose count grows and whose message is the latest', async function () {
    const { client, events } = store();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 1; i <= 12; i++) r.event(claim('a'), 'Warning', 'FailedBinding', `try ${i}`);
    await r.flush();
    const expected = [...Array.from({ length: AGGREGATE_MAX_MESSAGES - 1 }, (_, i) => `FailedBinding x1: try ${i + 1}`), `FailedBinding x3: ${COMBINED_PREFIX}try 12`];
    expect(shown(events)).to.deep.equal(expected);
  });

  it('other reasons, types and objects are not combined with them', async function () {
    const { client, events } = store();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 1; i <= 6; i++) {
      r.event(claim('a'), 'Warning', 'FailedBinding', `try ${i}`);
      r.event(claim('a'), 'Warning', 'VolumeMismatch', `try ${i}`);
      r.event(claim('a'), 'Normal', 'FailedBinding', `try ${i}`);
      r.event(claim('b'), 'Warning', 'FailedBinding', `try ${i}`);
    }
    await r.flush();
    expect(events.size).to.equal(24);
    expect(shown(events).filter((m) => m.includes(COMBINED_PREFIX))).to.deep.equal([]);
  });

  it('a message said again is aggregated into its own Event, as before', async function () {
    const { client, events } = store();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 0; i < 5; i++) r.event(claim('a'), 'Normal', 'WaitForFirstConsumer', 'waiting');
    await r.flush();
    expect(shown(events)).to.deep.equal(['WaitForFirstConsumer x5: waiting']);
  });

  it('messages further apart than 10 minutes start afresh', function () {
    const clock = new FakeClock();
    const a = new EventAggregator(clock, 100);
    for (let i = 1; i < AGGREGATE_MAX_MESSAGES; i++) expect(a.aggregate('k', `m${i}`).combined).to.equal(false);
    clock.advance(AGGREGATE_INTERVAL_MS + 1);
    expect(a.aggregate('k', 'm10')).to.deep.equal({ message: 'm10', combined: false });
    for (let i = 11; i < 10 + AGGREGATE_MAX_MESSAGES - 1; i++) expect(a.aggregate('k', `m${i}`).combined, `m${i}`).to.equal(false);
    expect(a.aggregate('k', 'm99')).to.deep.equal({ message: `${COMBINED_PREFIX}m99`, combined: true });
  });

  it('remembers at most as many similarity keys as it is given, dropping the least recently used', function () {
    const a = new EventAggregator(new FakeClock(), 2);
    for (let i = 1; i < AGGREGATE_MAX_MESSAGES; i++) a.aggregate('old', `m${i}`);
    a.aggregate('x', 'm');
    a.aggregate('y', 'm');
    // 'old' was dropped: its tenth message starts a new count.
    expect(a.aggregate('old', 'm10').combined).to.equal(false);
  });

  it('past the threshold, a message still remembered is aggregated into its own Event; a new one into the combined Event', async function () {
    const { client, events } = store();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 1; i <= AGGREGATE_MAX_MESSAGES; i++) r.event(claim('a'), 'Warning', 'FailedBinding', `try ${i}`);
    // The oldest message left the set at the threshold; the ninth is still in it.
    r.event(claim('a'), 'Warning', 'FailedBinding', 'try 9');
    r.event(claim('a'), 'Warning', 'FailedBinding', 'try 1');
    await r.flush();
    const shownNow = shown(events);
    expect(shownNow).to.include('FailedBinding x2: try 9');
    expect(shownNow).to.include(`FailedBinding x2: ${COMBINED_PREFIX}try 1`);
    expect(shownNow).to.have.length(AGGREGATE_MAX_MESSAGES);
  });

  it('a combined Event that expired (the API server answers its patch 404) is created again', async function () {
    const { client, events } = store();
    const r = new EventRecorder(client, 'test', 'host', false, new FakeClock());
    for (let i = 1; i <= AGGREGATE_MAX_MESSAGES; i++) r.event(claim('a'), 'Warning', 'FailedBinding', `try ${i}`);
    await r.flush();
    const combined = [...events.entries()].find(([, e]) => e.message?.startsWith(COMBINED_PREFIX))![0];
    // Events have a TTL (kube-apiserver's --event-ttl, 1 hour by default).
    events.delete(combined);
    r.event(claim('a'), 'Warning', 'FailedBinding', 'try 11');
    await r.flush();
    expect(shown(events).filter((m) => m.includes(COMBINED_PREFIX))).to.deep.equal([`FailedBinding x1: ${COMBINED_PREFIX}try 11`]);
  });

  it('messages that differ only past the 1,024 characters an Event keeps are one message', function () {
    const a = new EventAggregator(new FakeClock(), 100);
    const long = 'x'.repeat(2000);
    for (let i = 0; i < 2 * AGGREGATE_MAX_MESSAGES; i++) expect(a.aggregate('k', `${long}${i}`).combined).to.equal(false);
  });
});
