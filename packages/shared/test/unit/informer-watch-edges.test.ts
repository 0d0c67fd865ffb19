import { expect } from 'chai';
import { eventually } from '@topovol/testing';
import type { KubeObject } from '../../src/informer/object-key.js';
import { watchErrorOutcome } from '../../src/informer/watch-error.js';
import { streamWatch } from '../../src/informer/watch-stream.js';
import type { WatchEvent } from '../../src/informer/watch-stream.js';
import { ScriptedApi, line, names, pv, recorder, scriptedInformers, sleep, status } from './event-delivery-fixtures.js';
import type { ScriptedWatch } from './event-delivery-fixtures.js';

// Watches: what an event, a bookmark or an ERROR event does to an informer, and how one watch
// stream reads the server's lines.

describe('informer edges: watch events', function () {
  this.timeout(20_000);
  const { api, informer } = scriptedInformers();

  // client-go's reflector.go: a bookmark only moves the resourceVersion the next watch starts from.
  it('a bookmark moves the resourceVersion a watch resumes from, and is no object', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).end({ type: 'BOOKMARK', object: { kind: 'PersistentVolume', apiVersion: 'v1', metadata: { resourceVersion: '50' } } });
    const w = await a.watch(1);
    expect(w.query.get('resourceVersion')).to.equal('50');
    expect(inf.lastResourceVersion()).to.equal('50');
    expect(seen).to.deep.equal(['add a@5']);
    expect(names(inf)).to.deep.equal(['a@5']);
  });

  // reflector.go: a 429 on the watch is waited out and the watch resumed, not followed by a list.
  it('a 429 on a watch the server keeps open: the informer ends it and watches again from the same resourceVersion', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).send({ type: 'MODIFIED', object: pv('a', 11) }, status(429, 'TooManyRequests'));
    const w = await a.watch(1);
    expect(w.query.get('resourceVersion')).to.equal('11');
    expect(a.lists).to.equal(1);
  });

  it('every watch answered with 429: the watches that follow back off, not one in a loop', async function () {
    const a = await api(
      () => ({ rv: 10, items: [] }),
      (w) => w.end(status(429, 'TooManyRequests')),
    );
    const inf = informer(a, { backoff: { startMs: 300, maxMs: 1_000 } });
    inf.start();
    await inf.waitForSync();
    await sleep(1_500);
    // Backoff steps of 300-600, 600-1200 ms: a few watches; watching again at once made hundreds.
    expect(a.watches.length).to.be.within(1, 6);
  });

  it('watch events the projection cannot take (a DELETED of an object never cached, a MODIFIED) are delivered to no handler; adds and updates to the right ones', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a, {
      transform: (o) => {
        if (o.metadata?.labels?.bad) throw new Error('cannot project this one');
        return o;
      },
    });
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    let calls = 0;
    inf.addEventHandler({ onAdd: () => void calls++, onUpdate: () => void calls++, onDelete: () => void calls++ });
    inf.start();
    await inf.waitForSync();
    const w = await a.watch(0);
    w.send(
      { type: 'DELETED', object: pv('ghost', 11, { bad: 'yes' }) },
      { type: 'MODIFIED', object: pv('a', 12) },
      { type: 'MODIFIED', object: pv('a', 13, { bad: 'yes' }) },
      { type: 'ADDED', object: pv('b', 14) },
    );
    await eventually(() => expect(inf.lastResourceVersion()).to.equal('14'), 10_000, 10);
    expect(seen).to.deep.equal(['add a@5', 'update a@5->a@12', 'add b@14']);
    expect(calls, 'no call for the events not cached, not even one without an object').to.equal(3);
    expect(names(inf)).to.deep.equal(['a@12', 'b@14']);
  });

  // reflector.go: IsResourceExpired/IsGone mean a list; IsTooManyRequests a watch again.
  it('watch ERROR events: 410 by its code or by its reason (Expired, Gone) means a list, 429 a watch again, anything else a list', function () {
    expect(watchErrorOutcome({ code: 410 })).to.equal('gone');
    expect(watchErrorOutcome({ reason: 'Expired' })).to.equal('gone');
    expect(watchErrorOutcome({ code: 500, reason: 'Gone' })).to.equal('gone');
    expect(watchErrorOutcome({ code: 429, reason: 'TooManyRequests' })).to.equal('rewatch');
    expect(watchErrorOutcome({ code: 500, reason: 'InternalError' })).to.equal('relist');
  });
});

describe('informer edges: one watch stream', function () {
  this.timeout(20_000);
  const apis: ScriptedApi[] = [];
  afterEach(function () {
    for (const a of apis.splice(0)) a.close();
  });
  const stream = async (onWatch: (w: ScriptedWatch) => void, idleTimeoutMs = 60_000): Promise<{ events: WatchEvent[]; result: Promise<number> }> => {
    const a = await ScriptedApi.start(() => ({ rv: 1, items: [] }), onWatch);
    apis.push(a);
    const events: WatchEvent[] = [];
    const result = streamWatch(a.client, '/api/v1/persistentvolumes', {}, (e) => void events.push(e), new AbortController().signal, idleTimeoutMs);
    return { events, result };
  };

  it('a last line without its newline is still an event, and the events are counted', async function () {
    const { events, result } = await stream((w) => {
      w.send({ type: 'ADDED', object: pv('a', 1) });
      w.endRaw(JSON.stringify({ type: 'ADDED', object: pv('b', 2) }));
    });
    expect(await result).to.equal(2);
    expect(events.map((e) => (e.object as KubeObject).metadata?.name)).to.deep.equal(['a', 'b']);
  });

  it('a line that is not an event rejects the stream (the caller resumes from the last event applied)', async function () {
    const { events, result } = await stream((w) => w.endRaw(`${line({ type: 'ADDED', object: pv('a', 1) })}{"type":\n${line({ type: 'ADDED', object: pv('b', 2) })}`));
    let err: unknown;
    await result.catch((e: unknown) => (err = e));
    expect(String(err)).to.contain('not an event');
    expect(events).to.have.length(1);
  });

  it('JSON that is no event (null, no type, an unknown type, no object) rejects the stream as a broken line does', async function () {
    // Handlers take e.type and e.object as given; a null read from them threw out of the answer's
    // 'data' listener and ended the process.
    for (const bad of ['null', '7', '{"type":"ADDED"}', '{"type":"BOOKMARK","object":null}', '{"type":"SYNC","object":{}}', '{"object":{}}']) {
      const { events, result } = await stream((w) => w.endRaw(`${line({ type: 'ADDED', object: pv('a', 1) })}${bad}\n${line({ type: 'ADDED', object: pv('b', 2) })}`));
      let err: unknown;
      await result.catch((e: unknown) => (err = e));
      expect(String(err), bad).to.contain('not an event');
      expect(events, bad).to.have.length(1);
    }
  });

  it("a handler's throw rejects the stream with it, and later events are not handed over", async function () {
    const a = await ScriptedApi.start(() => ({ rv: 1, items: [] }), (w) => w.end({ type: 'ADDED', object: pv('a', 1) }, { type: 'ADDED', object: pv('b', 2) }));
    apis.push(a);
    const seen: string[] = [];
    const result = streamWatch(
      a.client,
      '/api/v1/persistentvolumes',
      {},
      (e) => {
        seen.push((e.object as KubeObject).metadata?.name ?? '');
        throw new Error('handler broke');
      },
      new AbortController().signal,
      60_000,
    );
    let err: unknown;
    await result.catch((e: unknown) => (err = e));
    expect(String(err)).to.contain('handler broke');
    expect(seen).to.deep.equal(['a']);
  });

  it('events keep a watch alive past its idle timeout', async function () {
    let timer: NodeJS.Timeout | undefined;
    const { result } = await stream((w) => {
      let n = 0;
      timer = setInterval(() => {
        if (++n <= 20) w.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(n) } } });
        else {
          clearInterval(timer);
          w.end();
        }
      }, 100);
    }, 1_000);
    try {
      expect(await result).to.equal(20);
    } finally {
      clearInterval(timer);
    }
  });

  it('a connection dropped mid-watch ends the stream', async function () {
    const { events, result } = await stream((w) => {
      w.send({ type: 'ADDED', object: pv('a', 1) });
      setTimeout(() => w.drop(), 50);
    });
    let settled = false;
    void result.then(
      () => (settled = true),
      () => (settled = true),
    );
    await eventually(() => expect(settled, 'the stream ended').to.equal(true), 10_000, 10);
    expect(events).to.have.length(1);
  });
});
