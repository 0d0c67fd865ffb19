import { expect } from 'chai';
import { ANN_SELECTED_NODE, LABEL_REGION, LABEL_ZONE, logger, quantityBytes, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, Event, Node, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { CapacityLoop } from '../../src/capacity-loop.js';
import type { CapacityLoopOptions } from '../../src/capacity-loop.js';
import { SYNC } from '../../src/capacity-key.js';
import { PENDING_TRUST_MS } from '../../src/objects/object-actuator.js';
import { fakeInformers, FakeCapacityQueue, FakeMeter, FakeObjectStore } from './capacity-fakes.js';
import type { FakeInformers } from './capacity-fakes.js';
import { DRIVER, GiB, NS } from './capacity-loop-fixtures.js';

const POLL_MS = 60_000;
const R = Resources.csiStorageCapacities;

const node = (name: string, labels: Record<string, string>): Node => ({ metadata: { name, labels } });
const sc: StorageClass = { metadata: { name: 'fast' }, provisioner: DRIVER, volumeBindingMode: 'WaitForFirstConsumer' };

/** Whether a label selector of a published object matches a node's labels (matchLabels and DoesNotExist). */
function selects(o: CSIStorageCapacity, labels: Record<string, string>): boolean {
  const s = o.nodeTopology ?? {};
  const byLabel = Object.entries(s.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpr = (s.matchExpressions ?? []).every((e) => (e.operator === 'DoesNotExist' ? !(e.key in labels) : false));
  return byLabel && byExpr;
}

/**
 * The lifetime of the loop's CSIStorageCapacity objects when the world moves under them: objects
 * deleted behind the informer's back, segments re-cut by a new node while the driver cannot answer.
 * The end state judged is what kube-scheduler would read: which object covers which node, and its figure.
 */
describe('CapacityLoop: objects outlive what the informer missed and what the driver cannot answer (fake informers and meter)', function () {
  let queue: FakeCapacityQueue;
  let meter: FakeMeter;
  let store: FakeObjectStore;
  let inf: FakeInformers;
  let loop: CapacityLoop;

  const start = async (mode: CapacityLoopOptions['mode'], nodes: Node[], watching: boolean): Promise<void> => {
    queue = new FakeCapacityQueue();
    meter = new FakeMeter({ available: 10n * GiB });
    store = new FakeObjectStore();
    inf = fakeInformers();
    if (watching) store.watch(R, inf.objects);
    const opts: CapacityLoopOptions = {
      driverName: DRIVER,
      immediateBinding: false,
      ephemeral: false,
      mode,
      identity: { driverName: DRIVER, managedBy: 'topovol-capacity', namespace: NS },
      pollIntervalMs: POLL_MS,
      minRefreshMs: 5_000,
      statusRefreshMs: 20_000,
      now: () => queue.now,
    };
    const status = { publish: () => Promise.resolve({ wrote: false }), pruneExpired: () => Promise.resolve(0) };
    loop = new CapacityLoop(inf, meter, store, status, { event: () => undefined }, queue, opts, logger());
    loop.register();
    for (const n of nodes) inf.nodes.set(n);
    inf.classes.set(sc);
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
  };
  const objects = (): CSIStorageCapacity[] => store.list<CSIStorageCapacity>(R);
  const coveringNode = (labels: Record<string, string>): [string | undefined, bigint | undefined][] =>
    objects()
      .filter((o) => selects(o, labels))
      .map((o) => [o.storageClassName, quantityBytes(o.capacity)]);
  const polls = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      queue.advance(POLL_MS);
      await queue.drain(loop.reconcile);
    }
  };

  describe('an object it created, deleted before the informer showed it (a relist reports deletes only of objects it had cached)', function () {
    const n1 = { [LABEL_ZONE]: 'a' };
    beforeEach(async function () {
      await start({ kind: 'domains', labels: [LABEL_ZONE], anyNode: true }, [node('n1', n1)], false);
      expect(objects()).to.have.length(1);
      await store.delete(R, objects()[0]!.metadata!.name!, NS);
      // The informer works again from here on: it shows the next writes.
      store.watch(R, inf.objects);
    });

    it('is created again at the next poll when the figure changed (its update found it gone)', async function () {
      meter.answer = { available: 8n * GiB };
      await polls(1);
      expect(coveringNode(n1)).to.deep.equal([['fast', 8n * GiB]]);
    });

    it('is created again once it has not shown up for PENDING_TRUST_MS when the figure did not change, and only once', async function () {
      await polls(Math.ceil(PENDING_TRUST_MS / POLL_MS) + 1);
      expect(coveringNode(n1)).to.deep.equal([['fast', 10n * GiB]]);
      await polls(3);
      expect(objects()).to.have.length(1);
    });
  });

  describe('failed provisioning reported again and again (anyone may bump an Event\'s count or toggle a selected node)', function () {
    const n1 = { [LABEL_ZONE]: 'a' };
    const claim: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'tenant', uid: 'uid-c', annotations: { [ANN_SELECTED_NODE]: 'n1' } }, spec: { storageClassName: 'fast' } };
    const failure = (count: number, namespace = 'tenant'): Event => ({
      metadata: { name: 'c.1', namespace, uid: `ev-${namespace}` },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'tenant', name: 'c', uid: 'uid-c' },
      reason: 'ProvisioningFailed',
      count,
    });
    beforeEach(async function () {
      await start({ kind: 'domains', labels: [LABEL_ZONE], anyNode: true }, [node('n1', n1)], true);
      inf.claims.set(claim);
    });

    it('costs at most two extra GetCapacity calls at once, then one per item and poll interval', async function () {
      const before = meter.calls.length;
      for (let s = 5; s <= 120; s += 5) {
        queue.advance(5_000);
        inf.failures.set(failure(s / 5));
        await queue.drain(loop.reconcile);
      }
      // Two polls and at most four failure-triggered calls in 120 s (two at once, one per minute
      // after); every bump made one before.
      expect(meter.calls.length - before).to.be.within(2, 6);
    });

    it('an Event in another namespace naming the claim refreshes nothing', async function () {
      queue.advance(10_000);
      await queue.drain(loop.reconcile);
      const before = meter.calls.length;
      inf.failures.set(failure(1, 'elsewhere'));
      await queue.drain(loop.reconcile);
      expect(meter.calls.length).to.equal(before);
      inf.failures.set(failure(1));
      await queue.drain(loop.reconcile);
      expect(meter.calls.length, 'the same Event in the claim\'s namespace does').to.equal(before + 1);
    });
  });

  describe('a deeper segment appears while the driver cannot answer', function () {
    const n1 = { [LABEL_REGION]: 'east' };
    const n2 = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z1' };

    beforeEach(async function () {
      await start({ kind: 'domains', labels: [LABEL_REGION, LABEL_ZONE], anyNode: true }, [node('n1', n1)], true);
      expect(coveringNode(n1)).to.deep.equal([['fast', 10n * GiB]]);
      meter.get = () => Promise.reject(new Error('rpc error: code = Unavailable desc = connection refused'));
      inf.nodes.set(node('n2', n2));
      await queue.drain(loop.reconcile);
    });

    it('keeps the shallower segment\'s object, and its figure, until its replacement exists', async function () {
      await polls(5);
      expect(coveringNode(n1), 'n1, outside every zone').to.deep.equal([['fast', 10n * GiB]]);
    });

    it('replaces it once the driver answers: one object per segment, n1\'s no longer covering n2', async function () {
      meter.get = FakeMeter.prototype.get.bind(meter);
      meter.answer = { available: 7n * GiB };
      await polls(2);
      expect(coveringNode(n1)).to.deep.equal([['fast', 7n * GiB]]);
      expect(coveringNode(n2)).to.deep.equal([['fast', 7n * GiB]]);
      expect(objects()).to.have.length(2);
    });
  });
});
