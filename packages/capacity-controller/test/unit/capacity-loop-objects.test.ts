import { expect } from 'chai';
import { ANN_SELECTED_NODE, LABEL_REGION, LABEL_ZONE, logger, quantityBytes, Resources } from '@topovol/shared';
import type { CSINode, CSIStorageCapacity, Event, Node, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { CapacityLoop } from '../../src/capacity-loop.js';
import type { CapacityLoopOptions } from '../../src/capacity-loop.js';
import { SYNC } from '../../src/capacity-key.js';
import { PENDING_TRUST_MS } from '../../src/objects/object-actuator.js';
import { fakeInformers, FakeCapacityQueue, FakeMeter, FakeObjectStore } from './capacity-fakes.js';
import type { FakeInformers } from './capacity-fakes.js';
import { DRIVER, GiB, NODE_KEY, NS } from './capacity-loop-fixtures.js';
import { LABEL_POOL } from '../../src/objects/capacity-object.js';

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

  /** `restartOn`: a new process over the objects stored so far, on the same clock; `failing`: the driver refuses from the first call. */
  interface Start {
    extra?: Partial<CapacityLoopOptions>;
    csiNodes?: CSINode[];
    classes?: StorageClass[];
    restartOn?: FakeObjectStore;
    failing?: Error;
  }
  const start = async (mode: CapacityLoopOptions['mode'], nodes: Node[], watching: boolean, { extra = {}, csiNodes = [], classes = [sc], restartOn, failing }: Start = {}): Promise<void> => {
    const clock = queue?.now;
    queue = new FakeCapacityQueue();
    if (restartOn && clock !== undefined) queue.now = clock;
    meter = new FakeMeter({ available: 10n * GiB });
    if (failing) meter.failure = failing;
    store = restartOn ?? new FakeObjectStore();
    store.clock = () => queue.now;
    inf = fakeInformers();
    if (watching) store.watch(R, inf.objects);
    // A restarted process lists what is stored.
    for (const o of restartOn?.list<CSIStorageCapacity>(R) ?? []) inf.objects.set(o);
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
      ...extra,
    };
    const status = { publish: () => Promise.resolve({ wrote: false }), pruneExpired: () => Promise.resolve(0) };
    loop = new CapacityLoop(inf, meter, store, status, { event: () => true }, queue, opts, logger());
    loop.register();
    for (const n of nodes) inf.nodes.set(n);
    for (const c of csiNodes) inf.csiNodes.set(c);
    for (const c of classes) inf.classes.set(c);
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

  describe('per node: kubelet drops the driver from the node\'s CSINode while its node plugin restarts', function () {
    const n1 = { [NODE_KEY]: 'n1', [LABEL_ZONE]: 'a' };
    const registered = (keys: string[]): CSINode => ({ metadata: { name: 'n1' }, spec: { drivers: [{ name: 'other.csi', nodeID: 'n1' }, { name: DRIVER, nodeID: 'n1', topologyKeys: keys }] } });
    const unregistered: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [{ name: 'other.csi', nodeID: 'n1' }] } };
    beforeEach(async function () {
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { extra: { onlyNode: 'n1' }, csiNodes: [registered([NODE_KEY])] });
      expect(coveringNode(n1)).to.deep.equal([['fast', 10n * GiB]]);
    });

    it('keeps the node\'s objects for the segment last registered, and refreshes them, as external-provisioner\'s fixed segment does', async function () {
      const uid = objects()[0]!.metadata!.uid;
      inf.csiNodes.set(unregistered);
      await queue.drain(loop.reconcile);
      meter.answer = { available: 6n * GiB };
      await polls(2);
      expect(coveringNode(n1)).to.deep.equal([['fast', 6n * GiB]]);
      expect(objects().map((o) => o.metadata?.uid)).to.deep.equal([uid]);
      // A class added meanwhile gets its object for that segment too.
      inf.classes.set({ ...sc, metadata: { name: 'slow' } });
      await queue.drain(loop.reconcile);
      expect(coveringNode(n1).map(([c]) => c).sort()).to.deep.equal(['fast', 'slow']);
    });

    it('follows the registration again once the driver is back, with the keys it registers', async function () {
      inf.csiNodes.set(unregistered);
      await queue.drain(loop.reconcile);
      inf.csiNodes.set(registered([LABEL_ZONE]));
      await queue.drain(loop.reconcile);
      expect(objects().map((o) => o.nodeTopology?.matchLabels)).to.deep.equal([{ [LABEL_ZONE]: 'a' }]);
    });

    it('still removes them when the node goes, registered or not', async function () {
      inf.csiNodes.remove(unregistered);
      await queue.drain(loop.reconcile);
      inf.nodes.remove(node('n1', n1));
      await queue.drain(loop.reconcile);
      expect(objects()).to.deep.equal([]);
    });

    it('keeps nothing in the central deployment: there a node without the driver has no capacity (as upstream\'s CSINode-driven topology)', async function () {
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { csiNodes: [registered([NODE_KEY])] });
      inf.csiNodes.set(unregistered);
      await queue.drain(loop.reconcile);
      expect(objects()).to.deep.equal([]);
    });
  });

  describe('per node: an instance that starts while kubelet has the driver unregistered (its DaemonSet pod replaced)', function () {
    const n1 = { [NODE_KEY]: 'n1' };
    const registered: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [{ name: DRIVER, nodeID: 'n1', topologyKeys: [NODE_KEY] }] } };
    const unregistered: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [] } };

    it('leaves the objects its predecessor left (owner level 1 or -1) until the driver registers, then takes them over', async function () {
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { extra: { onlyNode: 'n1' }, csiNodes: [registered] });
      const [before] = objects();
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { extra: { onlyNode: 'n1' }, csiNodes: [unregistered], restartOn: store });
      await polls(2);
      expect(objects().map((o) => o.metadata?.uid), 'still there').to.deep.equal([before!.metadata?.uid]);
      meter.answer = { available: 4n * GiB };
      inf.csiNodes.set(registered);
      await queue.drain(loop.reconcile);
      expect(objects().map((o) => [o.metadata?.uid, quantityBytes(o.capacity)])).to.deep.equal([[before!.metadata?.uid, 4n * GiB]]);
    });

    it('still deletes, while it waits, the objects of a class that went meanwhile (as upstream\'s onSCDelete)', async function () {
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { extra: { onlyNode: 'n1' }, csiNodes: [registered] });
      await start({ kind: 'csinode' }, [node('n1', n1)], true, { extra: { onlyNode: 'n1' }, csiNodes: [unregistered], classes: [], restartOn: store });
      expect(objects()).to.deep.equal([]);
    });

    it('waits for nothing with --capacity-count-unregistered-nodes (a driver without a node plugin never registers): a node that loses its segment loses its objects', async function () {
      const zoned = node('n1', { [LABEL_ZONE]: 'a' });
      await start({ kind: 'domains', labels: [LABEL_ZONE], anyNode: true }, [zoned], true, { extra: { onlyNode: 'n1' } });
      expect(objects()).to.have.length(1);
      inf.nodes.set(node('n1', {}));
      await queue.drain(loop.reconcile);
      expect(objects()).to.deep.equal([]);
    });
  });

  describe('a StorageClass deleted and re-created under its name (parameters are immutable: that is how they change), the driver refusing the new one', function () {
    const n1 = { [LABEL_ZONE]: 'a' };
    const at = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    const refused = new Error('rpc error: code = InvalidArgument desc = no volume group small');

    it('in one sync: the earlier class\'s object goes and its figure is not carried over (external-provisioner deletes on the delete event)', async function () {
      const first: StorageClass = { ...sc, metadata: { name: 'fast', creationTimestamp: at(0) }, parameters: { vg: 'big' } };
      await start({ kind: 'domains', labels: [LABEL_ZONE], anyNode: true }, [node('n1', n1)], true, { classes: [first] });
      expect(coveringNode(n1)).to.deep.equal([['fast', 10n * GiB]]);
      queue.advance(5_000);
      meter.failure = refused;
      inf.classes.remove(first);
      inf.classes.set({ ...first, metadata: { name: 'fast', creationTimestamp: at(queue.now) }, parameters: { vg: 'small' } });
      await queue.drain(loop.reconcile);
      await polls(3);
      expect(objects()).to.deep.equal([]);
      meter.failure = undefined;
      meter.answer = { available: 2n * GiB };
      await polls(1);
      expect(coveringNode(n1)).to.deep.equal([['fast', 2n * GiB]]);
    });

    it('across a restart: a pool moved to another domain leaves no figure in the old one', async function () {
      const pools = (region: string): Record<string, string> => ({ topologyConstrainedPools: JSON.stringify([{ poolName: 'p1', domainSegments: [{ domainLabel: 'region', value: region }] }]) });
      const east = { [LABEL_REGION]: 'east' };
      const west = { [LABEL_REGION]: 'west' };
      const mode: CapacityLoopOptions['mode'] = { kind: 'domains', labels: [LABEL_REGION, LABEL_ZONE], anyNode: true };
      const nodes = [node('e1', east), node('w1', west)];
      const first: StorageClass = { ...sc, metadata: { name: 'fast', creationTimestamp: at(0) }, parameters: pools('east') };
      await start(mode, nodes, true, { classes: [first] });
      expect(coveringNode(east)).to.have.length(1);
      queue.advance(5_000);
      const again: StorageClass = { ...first, metadata: { name: 'fast', creationTimestamp: at(queue.now) }, parameters: pools('west') };
      await start(mode, nodes, true, { classes: [again], restartOn: store, failing: refused });
      await polls(3);
      expect(coveringNode(east)).to.deep.equal([]);
    });
  });

  describe('pools: an earlier pool gains its first node while the driver cannot answer', function () {
    it('the later pool\'s object for the whole region goes instead of offering its figure on that node, which Ceph-CSI puts in the earlier pool', async function () {
      const z1 = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z1' };
      const z2 = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z2' };
      const pooled: StorageClass = {
        ...sc,
        parameters: {
          topologyConstrainedPools: JSON.stringify([
            { poolName: 'p1', domainSegments: [{ domainLabel: 'region', value: 'east' }, { domainLabel: 'zone', value: 'z1' }] },
            { poolName: 'p2', domainSegments: [{ domainLabel: 'region', value: 'east' }] },
          ]),
        },
      };
      await start({ kind: 'domains', labels: [LABEL_REGION, LABEL_ZONE], anyNode: true }, [node('a', z2)], true, { classes: [pooled] });
      expect(objects().map((o) => o.nodeTopology?.matchLabels)).to.deep.equal([{ [LABEL_REGION]: 'east' }]);
      meter.get = () => Promise.reject(new Error('rpc error: code = Unavailable desc = connection refused'));
      inf.nodes.set(node('b', z1));
      await queue.drain(loop.reconcile);
      await polls(3);
      const pool = (o: CSIStorageCapacity): string | undefined => o.metadata?.labels?.['capacity.topovol.io/pool'];
      expect(objects().filter((o) => selects(o, z1)).map(pool)).to.not.include('p2');
    });
  });

  describe('pools: a node in the pool\'s domain where the driver is not registered', function () {
    it('no object covers it (kube-scheduler would send pods there); once the driver registers, the domain\'s object covers both', async function () {
      const parameters = { topologyConstrainedPools: JSON.stringify([{ poolName: 'p1', domainSegments: [{ domainLabel: 'region', value: 'east' }] }]) };
      const z1 = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z1' };
      const z2 = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z2' };
      const csiNode = (name: string): CSINode => ({ metadata: { name }, spec: { drivers: [{ name: DRIVER, nodeID: name }] } });
      const mode: CapacityLoopOptions['mode'] = { kind: 'domains', labels: [LABEL_REGION, LABEL_ZONE], anyNode: false };
      await start(mode, [node('n1', z1), node('n2', z2)], true, { classes: [{ ...sc, parameters }], csiNodes: [csiNode('n1')] });
      expect(coveringNode(z1)).to.deep.equal([['fast', 10n * GiB]]);
      expect(coveringNode(z2)).to.deep.equal([]);
      inf.csiNodes.set(csiNode('n2'));
      queue.add(SYNC);
      await polls(2);
      expect(coveringNode(z1)).to.deep.equal([['fast', 10n * GiB]]);
      expect(coveringNode(z2)).to.deep.equal([['fast', 10n * GiB]]);
    });
  });

  // --domain-labels=region;zone;rack and a node without a zone (a middle label missing): its
  // segment is {region} alone, another pool's; the rack pool's domain selector reached it anyway.
  it("Ceph-CSI pools: a node whose labels reach a pool's domain, its segment another pool's, is covered by that pool's object only", async function () {
    const RACK = 'topology.test/rack';
    const a = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z1', [RACK]: 'r1' };
    const b = { [LABEL_REGION]: 'east', [LABEL_ZONE]: 'z2', [RACK]: 'r2' };
    const x = { [LABEL_REGION]: 'east', [RACK]: 'r1' };
    const ceph: StorageClass = {
      ...sc,
      metadata: { name: 'ceph' },
      parameters: { topologyConstrainedPools: JSON.stringify([{ poolName: 'rackpool', domainSegments: [{ domainLabel: 'rack', value: 'r1' }] }, { poolName: 'eastpool', domainSegments: [{ domainLabel: 'region', value: 'east' }] }]) },
    };
    await start({ kind: 'domains', labels: [LABEL_REGION, LABEL_ZONE, RACK], anyNode: true }, [node('a', a), node('b', b), node('x', x)], true, { classes: [ceph] });
    const pools = (labels: Record<string, string>): string[] => objects().filter((o) => selects(o, labels)).map((o) => o.metadata?.labels?.[LABEL_POOL] ?? '');
    expect(pools(x)).to.deep.equal(['eastpool']);
    expect(pools(a)).to.deep.equal(['rackpool']);
    expect(pools(b)).to.deep.equal(['eastpool']);
  });

  // A driver rollout adding a topology key: node old's CSINode still lists region only, while its
  // labels already carry a zone. Its segment ({region}) is the pool's: it must stay covered, and
  // the pool keep its domain object (no switch to per-segment objects and back during the rollout).
  it('Ceph-CSI pools, csinode mode: a node whose CSINode lists fewer keys than its labels carry stays covered by the pool that serves its segment', async function () {
    const R = 'topology.rbd.csi.ceph.com/region';
    const Z = 'topology.rbd.csi.ceph.com/zone';
    const labels = { a: { [R]: 'east', [Z]: 'z1' }, b: { [R]: 'east', [Z]: 'z2' }, old: { [R]: 'east', [Z]: 'z3' } };
    const keys: Record<string, string[]> = { a: [R, Z], b: [R, Z], old: [R] };
    const csi = (n: string): CSINode => ({ metadata: { name: n }, spec: { drivers: [{ name: DRIVER, nodeID: n, topologyKeys: keys[n]! }] } });
    const ceph: StorageClass = { ...sc, metadata: { name: 'ceph' }, parameters: { topologyConstrainedPools: JSON.stringify([{ poolName: 'eastpool', domainSegments: [{ domainLabel: 'region', value: 'east' }] }]) } };
    await start({ kind: 'csinode' }, Object.entries(labels).map(([n, l]) => node(n, l)), true, { classes: [ceph], csiNodes: Object.keys(labels).map(csi) });
    const pools = (l: Record<string, string>): string[] => objects().filter((o) => selects(o, l)).map((o) => o.metadata?.labels?.[LABEL_POOL] ?? '');
    for (const l of Object.values(labels)) expect(pools(l), JSON.stringify(l)).to.deep.equal(['eastpool']);
    expect(objects().map((o) => o.nodeTopology)).to.deep.equal([{ matchLabels: { [R]: 'east' } }]);
  });
});
