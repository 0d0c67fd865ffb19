import { expect } from 'chai';
import { logger, Resources } from '@topovol/shared';
import { CapacityLoop } from '../../src/capacity-loop.js';
import { SYNC } from '../../src/capacity-key.js';
import { fakeInformers, FakeCapacityQueue, FakeMeter, FakeObjectStore } from './capacity-fakes.js';
import type { FakeInformers } from './capacity-fakes.js';
import { csiNode, fakeLoop, GiB, loopOptions, MIN_REFRESH_MS, node, NODE_KEY, publishedFigures, pv, sc } from './capacity-loop-fixtures.js';

/**
 * The capacity loop driven without an API server: informers filled by hand, a fake meter for
 * GetCapacity, and a queue whose clock the test moves. Two classes with equal parameters on one node
 * are one GetCapacity request (source/running-requests.ts, requestKey).
 */
describe('CapacityLoop: GetCapacity calls shared and coalesced (fake informers and meter)', function () {
  let queue: FakeCapacityQueue;
  let meter: FakeMeter;
  let store: FakeObjectStore;
  let inf: FakeInformers;
  let loop: CapacityLoop;

  beforeEach(async function () {
    ({ queue, meter, store, inf, loop } = fakeLoop());
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('fast'));
    inf.classes.set(sc('slow'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
  });

  const published = (): ReturnType<typeof publishedFigures> => publishedFigures(store);

  it('two classes with equal parameters on one node share one call, and both publish its answer', function () {
    expect(meter.calls).to.deep.equal([{ parameters: { type: 'lvm' }, segment: { [NODE_KEY]: 'n1' } }]);
    expect(published()).to.deep.equal([
      ['fast', 10n * GiB],
      ['slow', 10n * GiB],
    ]);
  });

  it('a volume event refreshes both with one call; a second one within --capacity-min-refresh-interval waits for the end of it', async function () {
    queue.advance(30_000);
    meter.answer = { available: 8n * GiB };
    inf.volumes.set(pv('pv-1'));
    await queue.drain(loop.reconcile);
    expect(meter.calls, 'the first change is measured at once, once for both classes').to.have.length(2);
    expect(published()).to.deep.equal([
      ['fast', 8n * GiB],
      ['slow', 8n * GiB],
    ]);

    queue.advance(1_000);
    meter.answer = { available: 6n * GiB };
    inf.volumes.set(pv('pv-2'));
    await queue.drain(loop.reconcile);
    expect(meter.calls, 'a change within the interval is merged').to.have.length(2);

    queue.advance(MIN_REFRESH_MS - 1_000);
    await queue.drain(loop.reconcile);
    expect(meter.calls, 'one call at the end of the interval, again for both classes').to.have.length(3);
    expect(published()).to.deep.equal([
      ['fast', 6n * GiB],
      ['slow', 6n * GiB],
    ]);
  });

  it('at rest, the two classes are asked once per poll interval between them, never in between', async function () {
    for (let poll = 1; poll <= 3; poll++) {
      queue.advance(30_000);
      await queue.drain(loop.reconcile);
      expect(meter.calls, `half an interval after poll ${poll - 1}`).to.have.length(poll);
      queue.advance(30_000);
      await queue.drain(loop.reconcile);
      expect(meter.calls, `poll ${poll}: one call for both classes`).to.have.length(poll + 1);
    }
  });

  it('an item that falls due while the other class\'s call for the same request is running waits for that call', async function () {
    const release = meter.hold();
    queue.advance(60_000);
    meter.answer = { available: 4n * GiB };
    await queue.drain(loop.reconcile);
    expect(meter.calls, 'one running call for both classes').to.have.length(2);
    release();
    await queue.drain(loop.reconcile);
    expect(meter.calls).to.have.length(2);
    expect(published()).to.deep.equal([
      ['fast', 4n * GiB],
      ['slow', 4n * GiB],
    ]);
  });
});

describe('CapacityLoop: a restarted instance keeps the pools it published until it has figures', function () {
  it('publishes before its driver answers with every tracked pool kept as published, and a pool it no longer tracks not kept', async function () {
    const queue = new FakeCapacityQueue();
    const meter = new FakeMeter({ available: 10n * GiB });
    meter.hold();
    const store = new FakeObjectStore();
    const inf = fakeInformers();
    store.watch(Resources.csiStorageCapacities, inf.objects);
    const calls: { pools: number; keep?: (cls: string, pool: string) => boolean }[] = [];
    const status = {
      publish: (entries: unknown[], _c: unknown, keep?: (cls: string, pool: string) => boolean) => {
        calls.push({ pools: entries.length, ...(keep ? { keep } : {}) });
        return Promise.resolve({ wrote: false });
      },
      pruneExpired: () => Promise.resolve(0),
    };
    const opts = loopOptions(queue);
    const loop = new CapacityLoop(inf, meter, store, status, { event: () => true }, queue, opts, logger());
    loop.register();
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('fast'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    const first = calls[0];
    expect(first, 'the status was published while the driver had not answered').to.not.equal(undefined);
    expect(first!.pools).to.equal(0);
    expect(first!.keep?.('fast', `${NODE_KEY}=n1`)).to.equal(true);
    expect(first!.keep?.('gone', `${NODE_KEY}=n1`)).to.equal(false);
  });
});

describe('CapacityLoop: --capacity-ephemeral in the central loop (KEP-1472: <ephemeral> per segment, asked without parameters)', function () {
  it('measures <ephemeral> per segment with an empty request, publishes it in the aggregated status only, and writes no CSIStorageCapacity object for it', async function () {
    const meter = new FakeMeter({ available: 10n * GiB });
    const { queue, store, inf, loop, statusEntries } = fakeLoop(meter, { ephemeral: true });
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('fast'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    expect(meter.calls.map((c) => c.parameters)).to.have.deep.members([{ type: 'lvm' }, {}]);
    expect(meter.calls.every((c) => c.segment[NODE_KEY] === 'n1')).to.equal(true);
    // The API server refuses a CSIStorageCapacity with storageClassName <ephemeral> (not a name): none is written.
    expect(publishedFigures(store)).to.deep.equal([['fast', 10n * GiB]]);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity, e.nodeTopology?.matchLabels])).to.deep.equal([
      ['<ephemeral>', '10Gi', { [NODE_KEY]: 'n1' }],
      ['fast', '10Gi', { [NODE_KEY]: 'n1' }],
    ]);
    // A volume of the driver on the node: both figures are measured again.
    queue.advance(30_000);
    meter.answer = { available: 7n * GiB };
    inf.volumes.set(pv('pv-1'));
    await queue.drain(loop.reconcile);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity])).to.deep.equal([
      ['<ephemeral>', '7Gi'],
      ['fast', '7Gi'],
    ]);
    expect(store.list(Resources.csiStorageCapacities)).to.have.length(1);
  });
});

