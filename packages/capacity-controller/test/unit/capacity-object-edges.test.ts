import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { LABEL_CSI_MANAGED_BY, logger, quantityBytes, Resources } from '@topovol/shared';
import type { CSINode, CSIStorageCapacity, Logger, Node, PersistentVolume, StorageClass } from '@topovol/shared';
import { EPHEMERAL_CLASS, itemBaseKey, itemKey } from '../../src/objects/capacity-item.js';
import type { CapacityItem } from '../../src/objects/capacity-item.js';
import { itemOfObject, managedSelector, newCapacityObject } from '../../src/objects/capacity-object.js';
import type { ObjectIdentity } from '../../src/objects/capacity-object.js';
import { desiredItems } from '../../src/objects/desired-items.js';
import { perNodeManagedBy } from '../../src/objects/managed-by.js';
import { ObjectActuator } from '../../src/objects/object-actuator.js';
import { otherPublishersReport, solePublisherCondition } from '../../src/objects/other-publishers.js';
import { planItem, planObsolete } from '../../src/objects/plan-capacity-objects.js';
import { refreshDecision, takeFailureRefresh } from '../../src/objects/refresh-timing.js';
import type { ItemState, RefreshDecision } from '../../src/objects/refresh-timing.js';
import { volumeAffectsItem } from '../../src/objects/volume-affects-item.js';
import { computeSegments, placeNodes, segmentOfNode } from '../../src/segments/compute-segments.js';
import { deeperKeys } from '../../src/segments/deeper-keys.js';
import { KeptRegistration } from '../../src/segments/kept-registration.js';
import { selfExcludedNodes, unsegmentedNodes } from '../../src/segments/unsegmented-nodes.js';
import { FakeInformer, FakeObjectStore, testContext } from './capacity-fakes.js';

/**
 * Edges of the capacity controller's decisions that a mutation run of its built code found no
 * unit test held: whose objects are ours, which objects go and when, what a segment's selector
 * covers and when the driver is asked again. capacity-status-edges.test.ts holds the aggregated
 * status's edges.
 */

const DRIVER = 'test.csi.topovol.io';
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const RACK = 'topology.test/rack';
const GiB = 1n << 30n;
const NS = 'topovol-system';
const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'capacity-5d9', uid: 'rs-uid', controller: true };
const id: ObjectIdentity = { driverName: DRIVER, managedBy: 'topovol-capacity', namespace: NS, owner };

/** An object of ours for `item`, as the informer shows it. */
const existing = (item: CapacityItem, name: string, extra: { created?: string; deleting?: boolean } = {}): CSIStorageCapacity => {
  const o = newCapacityObject(id, item, { available: GiB });
  o.metadata = { ...o.metadata, name, uid: `uid-${name}`, resourceVersion: '7', creationTimestamp: extra.created ?? '2026-11-23T10:00:00Z', ...(extra.deleting ? { deletionTimestamp: '2026-11-23T11:00:00Z' } : {}) };
  delete o.metadata.generateName;
  return o;
};
const names = (actions: { object: CSIStorageCapacity }[]): (string | undefined)[] => actions.map((a) => a.object.metadata?.name);

describe('capacity decision edges (a mutation run of the capacity controller): objects, segments, refreshes', function () {
  describe('whose objects are ours', function () {
    it('the informer lists only objects of our driver and our managed-by value (planObsolete deletes whatever it lists)', function () {
      expect(managedSelector(id)).to.equal('csi.storage.k8s.io/drivername=test.csi.topovol.io,csi.storage.k8s.io/managed-by=topovol-capacity');
    });

    // An object under our labels whose selector we never write is foreign: it goes, even while the
    // item it resembles waits for its object, and is never updated as that item's.
    const shallow: CapacityItem = { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: '', absent: [ZONE] };
    const foreign: { name: string; exprs: { key: string; operator: 'Exists' | 'DoesNotExist' }[] }[] = [
      { name: 'Exists (the opposite nodes of DoesNotExist)', exprs: [{ key: ZONE, operator: 'Exists' }] },
      { name: 'a DoesNotExist key twice', exprs: [{ key: ZONE, operator: 'DoesNotExist' }, { key: ZONE, operator: 'DoesNotExist' }] },
      { name: 'DoesNotExist keys out of order', exprs: [{ key: RACK, operator: 'DoesNotExist' }, { key: ZONE, operator: 'DoesNotExist' }] },
    ];
    for (const f of foreign) {
      it(`an object whose selector has ${f.name} is not ours to keep`, function () {
        const o = existing(shallow, 'odd');
        o.nodeTopology = { matchLabels: { [REGION]: 'east' }, matchExpressions: f.exprs };
        expect(itemOfObject(o)).to.equal(undefined);
        expect(names(planObsolete(new Set([itemKey(shallow)]), [o], new Map(), new Set([itemBaseKey(shallow)])))).to.deep.equal(['odd']);
      });
    }

    it('a pool of a class gone is not kept for a pool of the same name of another class awaiting its object', function () {
      const gone: CapacityItem = { storageClassName: 'old', segment: { [REGION]: 'east' }, pool: 'p' };
      const wanted: CapacityItem = { storageClassName: 'new', segment: { [REGION]: 'east' }, pool: 'p' };
      const got = planObsolete(new Set([itemKey(wanted)]), [existing(gone, 'old-p')], new Map(), new Set([itemBaseKey(wanted)]), new Map([['new', Date.parse('2026-11-23T09:00:00Z')]]), [wanted]);
      expect(names(got)).to.deep.equal(['old-p']);
    });

    it('an object being deleted is not deleted again', function () {
      const item: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
      expect(planObsolete(new Set(), [existing(item, 'going', { deleting: true })], new Map())).to.deep.equal([]);
    });

    it('our owner reference made the controller again, without a second reference to it; other references stay', function () {
      const item: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
      const o = existing(item, 'a');
      const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'keep', uid: 'cm-uid' };
      o.metadata = { ...o.metadata, ownerReferences: [{ ...owner, controller: false }, other] };
      const actions = planItem(id, item, { available: GiB }, [o]);
      expect(actions.map((a) => (a.kind === 'update' ? a.changed : a.kind))).to.deep.equal([['ownerReferences']]);
      expect(actions[0]!.object.metadata?.ownerReferences).to.deep.equal([other, owner]);
    });
  });

  describe('objects kept until their replacements exist', function () {
    // Class fast's pool `west` is re-cut (its part in east awaits an object); the old object stays
    // unless its selector can reach nodes another pool of the class now serves.
    const cases: { name: string; object: CapacityItem; awaited: CapacityItem; others: CapacityItem[]; kept: boolean }[] = [
      {
        name: "another class's pool overlapping it does not count",
        object: { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: 'west' },
        awaited: { storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'west' },
        others: [{ storageClassName: 'slow', segment: { [REGION]: 'east' }, pool: 'other' }],
        kept: true,
      },
      {
        name: 'a pool whose zone the object excludes (DoesNotExist) does not count',
        object: { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: 'west', absent: [ZONE] },
        awaited: { storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'west' },
        others: [{ storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z1' }, pool: 'z1' }],
        kept: true,
      },
      {
        name: "a pool excluding the object's zone does not count",
        object: { storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z1' }, pool: 'west' },
        awaited: { storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'west' },
        others: [{ storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: 'rest', absent: [ZONE] }],
        kept: true,
      },
      {
        name: 'a pool of its class serving some of its nodes does (the figure would stand for the wrong pool)',
        object: { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: 'west' },
        awaited: { storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'west' },
        others: [{ storageClassName: 'fast', segment: { [REGION]: 'east', [ZONE]: 'z1' }, pool: 'z1' }],
        kept: false,
      },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const desired = [c.awaited, ...c.others];
        const got = planObsolete(new Set(desired.map(itemKey)), [existing(c.object, 'old')], new Map(), new Set([itemBaseKey(c.awaited)]), new Map(), desired);
        expect(names(got)).to.deep.equal(c.kept ? [] : ['old']);
      });
    }
  });

  describe('what a segment covers', function () {
    it('<ephemeral> in a segment a deeper one overlaps excludes the deeper nodes, as the classes do', function () {
      const got = desiredItems([], [{ [REGION]: 'east' }, { [REGION]: 'east', [ZONE]: 'z1' }], { driverName: DRIVER, immediateBinding: false, ephemeral: true });
      expect([...got.items.values()].map((d) => [d.item.storageClassName, d.item.segment, d.item.absent])).to.deep.equal([
        [EPHEMERAL_CLASS, { [REGION]: 'east' }, [ZONE]],
        [EPHEMERAL_CLASS, { [REGION]: 'east', [ZONE]: 'z1' }, undefined],
      ]);
    });

    it('prefix mode: only labels that start with the prefix, not ones that contain it', function () {
      const node: Node = { metadata: { name: 'n1', labels: { 'example.com/zone': 'z1', 'sub.example.com/rack': 'r1' } } };
      expect(segmentOfNode({ kind: 'prefix', prefix: 'example.com/', anyNode: true }, node, undefined, DRIVER)).to.deep.equal({ 'example.com/zone': 'z1' });
    });

    // A node where the driver is not registered is the driver's only with anyNode (a driver without a node plugin).
    const untracked: { name: string; anyNode: boolean; want: string[] }[] = [
      { name: 'with anyNode, a node without the driver and without the prefix is reported as untracked', anyNode: true, want: ['n1'] },
      { name: 'without anyNode, such a node is not the driver\'s: no report', anyNode: false, want: [] },
    ];
    for (const c of untracked) {
      it(`prefix mode: ${c.name}`, function () {
        const node: Node = { metadata: { name: 'n1', labels: { [ZONE]: 'z1' } } };
        const got = unsegmentedNodes({ kind: 'prefix', prefix: 'example.com/', anyNode: c.anyNode }, [node], () => undefined, DRIVER);
        expect(got.map((u) => u.node.metadata?.name)).to.deep.equal(c.want);
      });
    }

    it('csinode mode: a node of an overlapped segment that lacks the excluded label is matched, not reported', function () {
      const csi = (keys: string[]): CSINode => ({ metadata: { name: 'x' }, spec: { drivers: [{ name: DRIVER, nodeID: 'x', topologyKeys: keys }] } });
      const nodes: Node[] = [
        { metadata: { name: 'old', labels: { [REGION]: 'east', [ZONE]: 'z1' } } },
        { metadata: { name: 'new', labels: { [REGION]: 'east', [ZONE]: 'z1' } } },
        { metadata: { name: 'plain', labels: { [REGION]: 'east' } } },
      ];
      const keys: Record<string, string[]> = { old: [REGION], new: [REGION, ZONE], plain: [REGION] };
      const csiOf = (name: string): CSINode => csi(keys[name]!);
      const mode = { kind: 'csinode' } as const;
      const deeper = deeperKeys(computeSegments(mode, nodes, csiOf, DRIVER));
      expect(selfExcludedNodes(mode, placeNodes(mode, nodes, csiOf, DRIVER), DRIVER, deeper).map((u) => u.node.metadata?.name)).to.deep.equal(['old']);
    });
  });

  describe('which changes ask the driver again', function () {
    const item: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
    const pv = (terms: { key: string; operator: string; values?: string[] }[][]): PersistentVolume => ({
      metadata: { name: 'pv' },
      spec: { nodeAffinity: { required: { nodeSelectorTerms: terms.map((matchExpressions) => ({ matchExpressions })) } } },
    });
    const cases: { name: string; pv: PersistentVolume; want: boolean }[] = [
      { name: 'NotIn another zone: may be here', pv: pv([[{ key: ZONE, operator: 'NotIn', values: ['z2'] }]]), want: true },
      { name: 'Exists: may be here', pv: pv([[{ key: ZONE, operator: 'Exists' }]]), want: true },
      { name: 'a node name, a key the segment does not fix (a local volume): may be here', pv: pv([[{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n7'] }]]), want: true },
      { name: 'one of two terms holds here', pv: pv([[{ key: ZONE, operator: 'In', values: ['z2'] }], [{ key: ZONE, operator: 'In', values: ['z1'] }]]), want: true },
      { name: 'In another zone only: not here', pv: pv([[{ key: ZONE, operator: 'In', values: ['z2'] }]]), want: false },
    ];
    for (const c of cases) {
      it(`a volume's affinity, ${c.name}`, function () {
        expect(volumeAffectsItem(c.pv, item)).to.equal(c.want);
      });
    }
  });

  describe('refresh timing', function () {
    const POLL = 60_000;
    const T = 1_000_000;
    const measured = { available: 10n };
    const at = (st: Partial<ItemState>): RefreshDecision => refreshDecision({ refreshedAt: 0, dirty: false, failures: 0, ...st }, T, { pollIntervalMs: POLL, minRefreshMs: 5_000 });

    it('after one failed call the next is a retry (it opens no coalescing window and shares no running call)', function () {
      expect(at({ measured, dirty: true, failures: 1, retryAt: T - 1 })).to.deep.equal({ call: true, cause: 'retry' });
    });

    it('an item never measured asks for its first figure, failures or not', function () {
      expect(at({ dirty: true, failures: 1, retryAt: T - 1 })).to.deep.equal({ call: true, cause: 'first' });
    });

    it('failed provisionings refresh twice at once, then once per poll interval', function () {
      let now = T;
      const st: ItemState = { refreshedAt: 0, dirty: false, failures: 0 };
      const take = (): boolean => takeFailureRefresh(st, () => now, POLL);
      expect([take(), take(), take()]).to.deep.equal([true, true, false]);
      now = T + POLL / 2;
      expect(take()).to.equal(false);
      now = T + POLL;
      expect([take(), take()]).to.deep.equal([true, false]);
    });
  });

  describe('the actuator remembers what it created', function () {
    const item: CapacityItem = { storageClassName: 'fast', segment: { 'topology.test/node': 'n1' }, pool: '' };
    const R = Resources.csiStorageCapacities;

    it('until the informer shows that object, not another of its item', async function () {
      const store = new FakeObjectStore();
      const a = new ObjectActuator(store, NS, { replan: () => undefined, retryItem: () => undefined, refused: () => undefined, cleared: () => undefined }, false, () => 1_000_000);
      await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: GiB }) });
      const created = a.pending(itemKey(item))?.metadata?.name;
      a.seen(itemKey(item), 'csisc-someone-else');
      expect(a.pending(itemKey(item))?.metadata?.name).to.equal(created).and.not.equal(undefined);
    });

    it('when another object of its item is deleted', async function () {
      const store = new FakeObjectStore();
      const o = newCapacityObject(id, item, { available: GiB });
      const older = store.seed(R, { ...o, metadata: { ...o.metadata, name: 'csisc-older' } });
      const a = new ObjectActuator(store, NS, { replan: () => undefined, retryItem: () => undefined, refused: () => undefined, cleared: () => undefined }, false, () => 1_000_000);
      await a.execute(testContext(), { kind: 'create', item, object: newCapacityObject(id, item, { available: 2n * GiB }) });
      const created = a.pending(itemKey(item))?.metadata?.name;
      await a.execute(testContext(), { kind: 'delete', object: older, why: 'obsolete' });
      expect(a.pending(itemKey(item))?.metadata?.name).to.equal(created).and.not.equal(undefined);
      expect(store.list<CSIStorageCapacity>(R).map((x) => quantityBytes(x.capacity))).to.deep.equal([2n * GiB]);
    });
  });

  describe('per-node managed-by values', function () {
    const hash = (node: string): string => createHash('sha256').update(node).digest('hex').slice(0, 16);
    const cases: { name: string; base: string; node: string; want: string }[] = [
      { name: 'exactly 63 characters: plain', base: 'topovol-capacity', node: 'n'.repeat(46), want: `topovol-capacity-${'n'.repeat(46)}` },
      { name: '64 characters: the base and 16 hex digits of the node name', base: 'topovol-capacity', node: 'n'.repeat(47), want: `topovol-capacity-${hash('n'.repeat(47))}` },
      { name: 'a long base is cut so the value stays within 63', base: 'b'.repeat(60), node: 'worker-1', want: `${'b'.repeat(46)}-${hash('worker-1')}` },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const got = perNodeManagedBy(c.base, c.node);
        expect(got).to.equal(c.want);
        expect(got.length).to.be.at.most(63);
      });
    }
  });

  describe('other publishers', function () {
    const foreign = (by: string): CSIStorageCapacity => ({ metadata: { name: `o-${by}`, namespace: 'kube-system', labels: { [LABEL_CSI_MANAGED_BY]: by } }, storageClassName: 'fast' });

    it('one object of another manager is enough to say SolePublisher False', function () {
      expect(solePublisherCondition(DRIVER, [foreign('external-provisioner')])).to.include({ status: 'False', reason: 'OtherCapacityPublisher' });
    });

    it('only the leader records Warnings (every replica watches the objects)', async function () {
      const inf = new FakeInformer<CSIStorageCapacity>();
      const recorded: string[] = [];
      const fast: StorageClass = { metadata: { name: 'fast' }, provisioner: DRIVER };
      const r = otherPublishersReport(inf, () => fast, { event: (_o, _t, reason) => recorded.push(reason) > 0 }, logger(), DRIVER, 60_000);
      const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
      inf.set(foreign('external-provisioner'));
      await tick();
      expect(recorded, 'standby').to.deep.equal([]);
      const stop = new AbortController();
      const running = r.start(stop.signal);
      await tick();
      expect(recorded, 'leader').to.deep.equal(['OtherCapacityPublisher']);
      stop.abort();
      await running.catch(() => undefined);
    });
  });

  describe('a node plugin not registered (per node)', function () {
    const registered: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [{ name: DRIVER, nodeID: 'n1', topologyKeys: [ZONE] }] } };
    const gone: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [] } };

    it('objects wait only while the driver was never seen registered and the node exists unplaced', function () {
      expect(new KeptRegistration(DRIVER, 'n1', logger()).waitsForRegistration(true), 'never seen, unplaced').to.equal(true);
      expect(new KeptRegistration(DRIVER, 'n1', logger()).waitsForRegistration(false), 'never seen, node gone or placed').to.equal(false);
      const k = new KeptRegistration(DRIVER, 'n1', logger());
      k.csiNodeOf(registered);
      expect(k.waitsForRegistration(true), 'seen registered, now unplaced (its labels changed)').to.equal(false);
    });

    it('the Warning that the driver is gone is logged once while it stays gone', function () {
      const log = logger().child({});
      let warns = 0;
      log.warn = (_message: unknown): Logger => {
        warns++;
        return log;
      };
      const k = new KeptRegistration(DRIVER, 'n1', log);
      k.csiNodeOf(registered);
      for (let i = 0; i < 3; i++) expect(k.csiNodeOf(gone)?.spec?.drivers?.map((d) => d.name)).to.deep.equal([DRIVER]);
      expect(warns).to.equal(1);
    });
  });
});
