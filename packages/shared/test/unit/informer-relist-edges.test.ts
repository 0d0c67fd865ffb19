import { expect } from 'chai';
import { eventually, metricSum } from '@topovol/testing';
import { names, pv, recorder, scriptedInformers, sleep, status } from './event-delivery-fixtures.js';
import type { ListAnswer } from './event-delivery-fixtures.js';

// Lists and relists of an informer against a local API server whose answers each test writes.
// A relist stands for the events the watch missed, so handlers must hear of them from it.

describe('informer edges: lists and relists', function () {
  this.timeout(20_000);
  const { api, informer } = scriptedInformers();

  it('a relist after 410 Gone: onRelist once, then a delete for what vanished, an update for what changed, an add for what is new, nothing for what is unchanged', async function () {
    const a = await api((n) => (n === 1 ? { rv: 10, items: [pv('a', 5), pv('b', 6), pv('c', 7)] } : { rv: 20, items: [pv('a', 5), pv('b', 9), pv('d', 10)] }));
    const inf = informer(a);
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    const goneBefore = await metricSum('topovol_informer_watch_restarts_total', { resource: 'persistentvolumes', reason: 'gone' });
    inf.start();
    await inf.waitForSync();
    expect(seen.splice(0), 'the first list: adds, no onRelist').to.deep.equal(['add a@5', 'add b@6', 'add c@7']);
    (await a.watch(0)).end(status(410, 'Expired'));
    await a.watch(1);
    // c went while no watch was open: only the relist can tell handlers (as client-go's
    // tools/cache/delta_fifo.go Replace queues a delete for each known key the list lacks).
    expect(seen).to.deep.equal(['relist', 'delete c@7', 'update b@6->b@9', 'add d@10']);
    expect(names(inf)).to.deep.equal(['a@5', 'b@9', 'd@10']);
    expect(a.watches[1]?.query.get('resourceVersion')).to.equal('20');
    expect(await metricSum('topovol_informer_watch_restarts_total', { resource: 'persistentvolumes', reason: 'gone' })).to.equal(goneBefore + 1);
  });

  it('a relist with a new object an index cannot take: no add is delivered for it (the cache does not hold it)', async function () {
    const a = await api((n) => (n === 1 ? { rv: 10, items: [pv('a', 5)] } : { rv: 20, items: [pv('a', 5), pv('x', 11, { bad: 'yes' })] }));
    const inf = informer(a);
    inf.addIndex('picky', (o) => {
      if (o.metadata?.labels?.bad) throw new Error('cannot index this one');
      return [o.metadata?.name ?? ''];
    });
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).end(status(410, 'Expired'));
    await a.watch(1);
    expect(seen).to.deep.equal(['add a@5', 'relist']);
    expect(names(inf)).to.deep.equal(['a@5']);
  });

  // As client-go's shared_informer.go AddEventHandler: a late handler is given the store's contents.
  it('a handler added after the sync is given the cached objects as adds', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5), pv('b', 6)] }));
    const inf = informer(a);
    inf.start();
    await inf.waitForSync();
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    expect(seen.sort()).to.deep.equal(['add a@5', 'add b@6']);
  });

  it('start() twice runs one list and watch loop', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    inf.start();
    inf.start();
    await inf.waitForSync();
    await a.watch(0);
    await sleep(200);
    expect([a.lists, a.watches.length]).to.deep.equal([1, 1]);
  });

  it('relist() ends the open watch and lists once, at once (no backoff: it is no failure), then watches again', async function () {
    const a = await api((n) => ({ rv: 10 * n, items: [pv('a', 5)] }));
    // A backoff step longer than the test: only a list that follows at once passes.
    const inf = informer(a, { backoff: { startMs: 60_000, maxMs: 60_000 } });
    inf.start();
    await inf.waitForSync();
    await a.watch(0);
    inf.relist();
    await a.watch(1);
    expect(a.lists).to.equal(2);
    expect(a.watches[1]?.query.get('resourceVersion')).to.equal('20');
    await sleep(200);
    expect(a.lists, 'one list per relist()').to.equal(2);
  });

  it("relist() while the watch waits for the client's rate limiter: the list comes first, the watch is not opened before it", async function () {
    const a = await api((n) => ({ rv: 10 * n, items: [pv('a', 5)] }));
    const inf = informer(a, { backoff: { startMs: 60_000, maxMs: 60_000 } });
    a.gateFromWait(2); // the list passes; the watch after it waits
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(a.heldWaits()).to.equal(1), 10_000, 10);
    inf.relist();
    a.release();
    await eventually(() => expect(a.lists).to.equal(2), 10_000, 10);
    const w = await a.watch(0);
    expect(w.query.get('resourceVersion'), "the first watch opened is the relist's").to.equal('20');
  });

  it('events after an ERROR event in the same write are not applied (the list that follows is the truth)', async function () {
    const a = await api((n) => ({ rv: 10 * n, items: [pv('a', 5)] }));
    const inf = informer(a);
    const { seen, handler } = recorder();
    inf.addEventHandler(handler);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).send(status(500, 'InternalError'), { type: 'MODIFIED', object: pv('a', 99) });
    await a.watch(1);
    expect(seen).to.deep.equal(['add a@5', 'relist']);
    expect(names(inf)).to.deep.equal(['a@5']);
  });

  // reflector.go: a 410 (Expired/Gone) on the watch means our resourceVersion is too old to resume
  // from; only a list can follow, however the server ends the stream.
  it('a 410 Gone on a watch the server keeps open: the informer ends it and relists', async function () {
    const a = await api((n) => ({ rv: 10 * n, items: [pv('a', 5)] }));
    const inf = informer(a);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).send(status(410, 'Expired'));
    await eventually(() => expect(a.lists).to.equal(2), 10_000, 10);
  });

  it('a 410 Gone and the connection closed in the same write (no end of the response): the informer relists', async function () {
    const a = await api((n) => ({ rv: 10 * n, items: [pv('a', 5)] }));
    const inf = informer(a);
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).sendAndCut(status(410, 'Expired'));
    await eventually(() => expect(a.lists).to.equal(2), 10_000, 10);
    expect(a.watches.slice(1).map((w) => w.query.get('resourceVersion')), 'no watch resumed from the expired resourceVersion').to.not.include('10');
  });

  it("listedAfter: false against an informer that has not listed, and false for a list asked for before the other's was in", async function () {
    let answerSlow: (() => void) | undefined;
    const slowServer = await api(() => new Promise<ListAnswer>((resolve) => (answerSlow = () => resolve({ rv: 10, items: [] }))));
    const fastServer = await api(() => ({ rv: 10, items: [] }));
    const slow = informer(slowServer);
    const fast = informer(fastServer);
    const never = informer(fastServer);
    slow.start();
    await eventually(() => expect(answerSlow).to.not.equal(undefined), 10_000, 10);
    fast.start();
    await fast.waitForSync();
    expect(fast.listedAfter(never), 'never listed').to.equal(false);
    answerSlow?.();
    await slow.waitForSync();
    expect(slow.listedAfter(fast), "asked for before fast's list was in").to.equal(false);
    expect(fast.listedAfter(slow)).to.equal(false);
  });
});
