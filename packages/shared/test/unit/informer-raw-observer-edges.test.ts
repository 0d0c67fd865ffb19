import { expect } from 'chai';
import { eventually } from '@topovol/testing';
import type { KubeObject } from '../../src/informer/object-key.js';
import { RawObservers } from '../../src/informer/raw-observers.js';
import { names, pv, scriptedInformers, sleep, status } from './event-delivery-fixtures.js';
import type { ListAnswer } from './event-delivery-fixtures.js';

// Raw observers see objects before projection; an informer parses answers without managedFields
// unless an observer asked for them, so adding such an observer may open the watch again. Neither
// may lose an event, and a watch opened again on purpose is no failure.

const mf = [{ manager: 'kubectl', operation: 'Update' }];
const withMf = (name: string, rv: number): KubeObject => ({ metadata: { name, resourceVersion: String(rv), managedFields: mf } });
/** Records `name@rv cached=<rv of the cached copy> mf=<whether managedFields came>`. */
const observe =
  (seen: string[]) =>
  (raw: KubeObject, cached: KubeObject | undefined): void =>
    void seen.push(`${raw.metadata?.name}@${raw.metadata?.resourceVersion} cached=${cached?.metadata?.resourceVersion ?? '-'} mf=${raw.metadata?.managedFields !== undefined}`);

describe('informer edges: raw observers and managedFields', function () {
  this.timeout(20_000);
  const { api, informer } = scriptedInformers();

  it('every raw observer sees every object', function () {
    const o = new RawObservers<KubeObject>();
    const seen: string[] = [];
    o.add((raw) => void seen.push(`first ${raw.metadata?.name}`), {});
    o.add((raw) => void seen.push(`second ${raw.metadata?.name}`), { managedFields: 'cached' });
    o.observe(pv('a', 1), undefined, (fn) => fn());
    expect(seen).to.deep.equal(['first a', 'second a']);
  });

  it("an observer of cached objects' managedFields: the first list without them, watch events and relists with them, each with the cached copy", async function () {
    const a = await api((n) => (n === 1 ? { rv: 10, items: [withMf('a', 5)] } : { rv: 20, items: [withMf('a', 11)] }));
    const inf = informer(a);
    const seen: string[] = [];
    inf.addRawObserver(observe(seen), { managedFields: 'cached' });
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).end({ type: 'MODIFIED', object: withMf('a', 11) }, status(410, 'Expired'));
    await a.watch(1);
    expect(seen).to.deep.equal(['a@5 cached=- mf=false', 'a@11 cached=5 mf=true', 'a@11 cached=11 mf=true']);
  });

  it("an observer of cached objects' managedFields, after an empty first list: a watch update of an object added since comes with them", async function () {
    const a = await api(() => ({ rv: 10, items: [] }));
    const inf = informer(a);
    const seen: string[] = [];
    inf.addRawObserver(observe(seen), { managedFields: 'cached' });
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).send({ type: 'ADDED', object: withMf('b', 12) }, { type: 'MODIFIED', object: withMf('b', 13) });
    await eventually(() => expect(seen).to.have.length(2), 10_000, 10);
    expect(seen[1]).to.equal('b@13 cached=12 mf=true');
  });

  it("an observer of every object's managedFields added while the first list is under way sees the objects with them, in the list asked for next", async function () {
    let answerFirst: (() => void) | undefined;
    const a = await api((n) => (n === 1 ? new Promise<ListAnswer>((resolve) => (answerFirst = () => resolve({ rv: 10, items: [withMf('a', 5)] }))) : { rv: 20, items: [withMf('a', 5)] }));
    const inf = informer(a);
    inf.start();
    await eventually(() => expect(answerFirst).to.not.equal(undefined), 10_000, 10);
    const seen: string[] = [];
    inf.addRawObserver(observe(seen), { managedFields: 'all' });
    answerFirst?.();
    await a.watch(0);
    expect(seen).to.deep.equal(['a@5 cached=5 mf=true']);
    expect(a.lists).to.equal(2);
  });

  it("an observer of every object's managedFields added by a handler mid-write: the rest of that write is not applied, and the watch opened again delivers it with them", async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    const seen: string[] = [];
    inf.addEventHandler({
      onUpdate: (_old, o) => {
        if (o.metadata?.resourceVersion === '11') inf.addRawObserver(observe(seen), { managedFields: 'all' });
      },
    });
    inf.start();
    await inf.waitForSync();
    (await a.watch(0)).send({ type: 'MODIFIED', object: withMf('a', 11) }, { type: 'MODIFIED', object: withMf('a', 12) });
    const w = await a.watch(1);
    expect(w.query.get('resourceVersion'), 'resumed after the last event applied').to.equal('11');
    w.send({ type: 'MODIFIED', object: withMf('a', 12) });
    await eventually(() => expect(names(inf)).to.deep.equal(['a@12']), 10_000, 10);
    expect(seen).to.deep.equal(['a@12 cached=11 mf=true']);
  });

  it("an observer of one manager's entries added after the start: the watch is opened again, and only events naming that manager come with managedFields; one of another manager opens it again", async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    const seen: string[] = [];
    inf.start();
    await inf.waitForSync();
    const byUpstream = (rv: number): KubeObject => ({ metadata: { name: 'a', resourceVersion: String(rv), managedFields: [{ manager: 'kube-controller-manager', operation: 'Update' }] } });
    await a.watch(0);
    inf.addRawObserver(observe(seen), { managedFields: 'cached', managers: ['kube-controller-manager'] });
    const w1 = await a.watch(1);
    w1.send({ type: 'MODIFIED', object: withMf('a', 12) }, { type: 'MODIFIED', object: byUpstream(13) });
    await eventually(() => expect(seen).to.deep.equal(['a@12 cached=5 mf=false', 'a@13 cached=12 mf=true']), 10_000, 10);
    inf.addRawObserver(observe(seen), { managedFields: 'cached', managers: ['kubectl'] });
    const w2 = await a.watch(2);
    expect(w2.query.get('resourceVersion'), 'resumed after the last event applied').to.equal('13');
    w2.send({ type: 'MODIFIED', object: withMf('a', 14) });
    await eventually(() => expect(seen.slice(2)).to.deep.equal(['a@14 cached=13 mf=true', 'a@14 cached=13 mf=true']), 10_000, 10);
  });

  it('a watch opened again for a new observer is no failure (no backoff), and only that one watch end is taken as intended', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a, { backoff: { startMs: 60_000, maxMs: 60_000 } });
    inf.start();
    await inf.waitForSync();
    await a.watch(0);
    inf.addRawObserver(() => undefined, { managedFields: 'all' });
    const w = await a.watch(1);
    expect(w.query.get('resourceVersion')).to.equal('10');
    // Ended at once with nothing in it: a backoff step (60 s here) before the next watch.
    w.end();
    await sleep(300);
    expect(a.watches.length).to.equal(2);
  });

  it('a watch is opened again only for an observer that needs managedFields the open watch was parsed without', async function () {
    const a = await api(() => ({ rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a);
    inf.start();
    await inf.waitForSync();
    await a.watch(0);
    inf.addRawObserver(() => undefined);
    await sleep(300);
    expect(a.watches.length, 'an observer of no managedFields').to.equal(1);
    inf.addRawObserver(() => undefined, { managedFields: 'all' });
    await a.watch(1);
    inf.addRawObserver(() => undefined, { managedFields: 'all' });
    await sleep(300);
    expect(a.watches.length, 'the open watch already has them').to.equal(2);
  });

  it("an observer added between watches (during a relist) does not make the next watch's end count as intended", async function () {
    let answerSecond: (() => void) | undefined;
    const a = await api((n) => (n === 2 ? new Promise<ListAnswer>((resolve) => (answerSecond = () => resolve({ rv: 20, items: [pv('a', 5)] }))) : { rv: 10, items: [pv('a', 5)] }));
    const inf = informer(a, { backoff: { startMs: 60_000, maxMs: 60_000 } });
    inf.start();
    await inf.waitForSync();
    await a.watch(0);
    inf.relist();
    await eventually(() => expect(answerSecond).to.not.equal(undefined), 10_000, 10);
    inf.addRawObserver(() => undefined, { managedFields: 'all' });
    answerSecond?.();
    const w = await a.watch(1);
    w.end();
    await sleep(300);
    expect(a.watches.length, 'a backoff step (60 s here) before the next watch').to.equal(2);
  });
});
