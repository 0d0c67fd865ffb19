import { expect } from 'chai';
import type { CSIStorageCapacity, PersistentVolume, StorageClass } from '@topovol/shared';
import fc from 'fast-check';
import { EPHEMERAL_CLASS, itemBaseKey, itemKey, parseItemKey } from '../../src/objects/capacity-item.js';
import type { CapacityItem } from '../../src/objects/capacity-item.js';
import { itemOfObject, LABEL_POOL, newCapacityObject } from '../../src/objects/capacity-object.js';
import type { ObjectIdentity } from '../../src/objects/capacity-object.js';
import { desiredItems } from '../../src/objects/desired-items.js';
import { statusEntries } from '../../src/aggregate/status-entries.js';
import { buildStorageStatus } from '../../src/status/build-storage-status.js';
import { itemCoversNode, itemsToRefreshAfterFailure } from '../../src/objects/failure-refresh.js';
import { planItem, planObsolete } from '../../src/objects/plan-capacity-objects.js';
import { quantityBytes } from '@topovol/shared';
import { volumeAffectsItem } from '../../src/objects/volume-affects-item.js';
import { parseConstrainedPools } from '../../src/pools/topology-constrained-pools.js';
import { placeNodes, segmentLabelKeys } from '../../src/segments/compute-segments.js';
import { uniqueSegments } from '../../src/segments/segment.js';

const DRIVER = 'test.csi.topovol.io';
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const RACK = 'topology.test/rack';
const GiB = 1n << 30n;

/** Placed nodes as the loop hands them to desiredItems' domain check. */
const asDomainNodes = (placed: readonly { node: { metadata?: { labels?: Record<string, string> } }; segment: Record<string, string> }[]) => placed.map((p) => ({ labels: p.node.metadata?.labels ?? {}, segment: p.segment }));
const sc = (name: string, extra: Partial<StorageClass> = {}): StorageClass => ({ metadata: { name }, provisioner: DRIVER, volumeBindingMode: 'WaitForFirstConsumer', ...extra });
const pools = (list: { poolName: string; domainSegments: { domainLabel: string; value: string }[] }[]): Record<string, string> => ({ topologyConstrainedPools: JSON.stringify(list) });
const id: ObjectIdentity = { driverName: DRIVER, managedBy: 'topovol-capacity', namespace: 'topovol-system', owner: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'capacity-5d9', uid: 'rs-uid', controller: true } };
const existing = (item: CapacityItem, capacity: string, extra: { name?: string; created?: string; max?: string; owner?: boolean } = {}): CSIStorageCapacity => {
  const o = newCapacityObject(id, item, { available: quantityBytes(capacity)!, ...(extra.max ? { maximumVolumeSize: quantityBytes(extra.max)! } : {}) });
  o.metadata = { ...o.metadata, name: extra.name ?? 'csisc-a', uid: `uid-${extra.name ?? 'a'}`, resourceVersion: '7', creationTimestamp: extra.created ?? '2026-11-23T10:00:00Z' };
  if (extra.owner === false) delete o.metadata.ownerReferences;
  delete o.metadata.generateName;
  return o;
};

describe('capacity: desired items, object plans and pools (external-provisioner pkg/capacity/capacity.go)', function () {
  describe('desiredItems', function () {
    const segs = [{ [ZONE]: 'z1' }, { [ZONE]: 'z2' }];
    const opts = { driverName: DRIVER, immediateBinding: false, ephemeral: false };

    it('one item per (class of this driver with delayed binding) × segment', function () {
      const got = desiredItems([sc('fast'), sc('other', { provisioner: 'other.csi' }), sc('now', { volumeBindingMode: 'Immediate' })], segs, opts);
      expect([...got.items.values()].map((d) => [d.item.storageClassName, d.item.segment[ZONE]])).to.deep.equal([
        ['fast', 'z1'],
        ['fast', 'z2'],
      ]);
    });

    it('Immediate classes with --capacity-for-immediate-binding, and <ephemeral> with --capacity-ephemeral (no parameters)', function () {
      const got = desiredItems([sc('now', { volumeBindingMode: 'Immediate', parameters: { a: 'b' } })], segs, { ...opts, immediateBinding: true, ephemeral: true });
      const names = [...got.items.values()].map((d) => `${d.item.storageClassName}:${d.item.segment[ZONE]}:${JSON.stringify(d.parameters)}`);
      expect(names).to.deep.equal(['now:z1:{"a":"b"}', 'now:z2:{"a":"b"}', `${EPHEMERAL_CLASS}:z1:{}`, `${EPHEMERAL_CLASS}:z2:{}`]);
    });

    it('a segment overlapped by a deeper one excludes the deeper nodes (DoesNotExist); its object round-trips to the same item; pools do not', function () {
      const mixed: Record<string, string>[] = [{ [REGION]: 'east' }, { [REGION]: 'east', [ZONE]: 'z1' }];
      const got = desiredItems([sc('fast')], mixed, opts);
      const shallow = [...got.items.values()].find((d) => !d.item.segment[ZONE])!.item;
      expect(shallow.absent).to.deep.equal([ZONE]);
      const o = newCapacityObject(id, shallow, { available: GiB });
      expect(o.nodeTopology).to.deep.equal({ matchLabels: { [REGION]: 'east' }, matchExpressions: [{ key: ZONE, operator: 'DoesNotExist' }] });
      expect(itemOfObject(o)).to.deep.equal(shallow);
      expect(got.items.has(itemKey(itemOfObject(o)!))).to.equal(true);
      // The same labels without the exclusion (an object written before it existed) is a different, obsolete item.
      const legacy = existing({ ...shallow, absent: undefined }, '1Gi', { name: 'old' });
      expect(planObsolete(new Set(got.items.keys()), [legacy], new Map()).map((a) => a.object.metadata?.name)).to.deep.equal(['old']);
      // Foreign expressions are not ours.
      expect(itemOfObject({ ...o, nodeTopology: { matchLabels: {}, matchExpressions: [{ key: ZONE, operator: 'In', values: ['z1'] }] } })).to.equal(undefined);
      const pooled = desiredItems([sc('ceph', { parameters: pools([{ poolName: 'p', domainSegments: [{ domainLabel: 'region', value: 'east' }] }]) })], mixed, opts);
      expect([...pooled.items.values()].map((d) => d.item.absent)).to.deep.equal([undefined]);
    });

    it('pools constrained to domains: one item per pool in its domain, asked with pool=<name>, the list parameter removed', function () {
      const cls = sc('ceph', { parameters: { clusterID: 'c1', ...pools([{ poolName: 'p-z1', domainSegments: [{ domainLabel: 'zone', value: 'z1' }] }, { poolName: 'p-z2', domainSegments: [{ domainLabel: 'zone', value: 'z2' }] }]) } });
      const got = desiredItems([cls], segs, opts);
      expect([...got.items.values()].map((d) => [d.item.pool, d.item.segment, d.parameters])).to.deep.equal([
        ['p-z1', { [ZONE]: 'z1' }, { clusterID: 'c1', pool: 'p-z1' }],
        ['p-z2', { [ZONE]: 'z2' }, { clusterID: 'c1', pool: 'p-z2' }],
      ]);
      expect(got.problems).to.deep.equal([]);
    });

    it('a pool serving a higher domain (region) covers all its zones; a domain without pool is a NoPoolForDomain problem', function () {
      const three = [{ [REGION]: 'east', [ZONE]: 'z1' }, { [REGION]: 'east', [ZONE]: 'z2' }, { [REGION]: 'west', [ZONE]: 'z9' }];
      const cls = sc('ceph', { parameters: pools([{ poolName: 'east', domainSegments: [{ domainLabel: 'region', value: 'east' }] }, { poolName: 'nowhere', domainSegments: [{ domainLabel: 'region', value: 'mars' }] }]) });
      const got = desiredItems([cls], three, opts);
      expect([...got.items.values()].map((d) => d.item.pool)).to.deep.equal(['east']);
      expect(got.problems).to.have.length(1);
      expect(got.problems[0]).to.include({ storageClassName: 'ceph', reason: 'NoPoolForDomain' });
      expect(got.problems[0]!.message).to.contain(`${ZONE}=z9`);
    });

    it('a pool whose domain holds a node in no segment (driver not registered there) is published per segment: no object covers that node', function () {
      // n1 (zone z1) is registered, n2 (zone z2, same region) is not: external-provisioner publishes
      // per segment of registered nodes, so kube-scheduler finds no capacity on n2.
      const registered = { [REGION]: 'east', [ZONE]: 'z1' };
      const unregistered: Record<string, string> = { [REGION]: 'east', [ZONE]: 'z2' };
      const cls = sc('ceph', { parameters: pools([{ poolName: 'east', domainSegments: [{ domainLabel: 'region', value: 'east' }] }]) });
      const items = (unplaced: Record<string, string>[]) => [...desiredItems([cls], [registered], opts, undefined, [{ labels: registered, segment: registered }, ...unplaced.map((labels) => ({ labels }))]).items.values()].map((d) => d.item);
      const covering = (labels: Record<string, string>, unplaced: Record<string, string>[]): string[] => items(unplaced).filter((i) => itemCoversNode(i, labels)).map((i) => i.pool);
      expect(covering(unregistered, [unregistered])).to.deep.equal([]);
      expect(covering(registered, [unregistered])).to.deep.equal(['east']);
      // No such node: the domain's selector, as before.
      expect(items([]).map((i) => i.segment)).to.deep.equal([{ [REGION]: 'east' }]);
      // An unregistered node inside a served segment (zone z1) or outside the domain changes nothing:
      // the segment's object, upstream's too, matches it anyway.
      expect(items([{ [REGION]: 'east', [ZONE]: 'z1' }, { [REGION]: 'west', [ZONE]: 'z9' }, {}]).map((i) => i.segment)).to.deep.equal([{ [REGION]: 'east' }]);
    });

    it("a node whose labels reach a pool's domain though its segment is another pool's (a middle domain label missing) is offered only its segment's pool", function () {
      // --domain-labels=region;zone;rack: x has region and rack but no zone, so its segment is
      // {region} alone, which the region pool serves; the rack pool's domain selector (rack=r1)
      // would match x too, and kube-scheduler would count both pools' room for it.
      const mode = { kind: 'domains' as const, labels: [REGION, ZONE, RACK], anyNode: true };
      const nodes = { a: { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }, b: { [REGION]: 'east', [ZONE]: 'z2', [RACK]: 'r2' }, x: { [REGION]: 'east', [RACK]: 'r1' } };
      const placed = placeNodes(mode, Object.entries(nodes).map(([name, labels]) => ({ metadata: { name, labels } })), () => undefined, DRIVER);
      const segments = uniqueSegments(placed.map((p) => p.segment));
      const keys = segmentLabelKeys(placed);
      const list = [
        { poolName: 'rackpool', domainSegments: [{ domainLabel: 'rack', value: 'r1' }] },
        { poolName: 'eastpool', domainSegments: [{ domainLabel: 'region', value: 'east' }] },
      ];
      const items = [...desiredItems([sc('ceph', { parameters: pools(list) })], segments, opts, (k) => keys.get(k), asDomainNodes(placed)).items.values()].map((d) => d.item);
      const covering = (labels: Record<string, string>): string[] => items.filter((i) => itemCoversNode(i, labels)).map((i) => i.pool);
      expect(covering(nodes.x)).to.deep.equal(['eastpool']);
      expect(covering(nodes.a)).to.deep.equal(['rackpool']);
      expect(covering(nodes.b)).to.deep.equal(['eastpool']);
      // Without x, the rack pool is its whole domain again.
      const placedAB = placed.filter((p) => p.node.metadata?.name !== 'x');
      const ab = [...desiredItems([sc('ceph', { parameters: pools(list) })], uniqueSegments(placedAB.map((p) => p.segment)), opts, (k) => segmentLabelKeys(placedAB).get(k), asDomainNodes(placedAB)).items.values()].map((d) => d.item);
      expect(ab.find((i) => i.pool === 'rackpool')?.segment).to.deep.equal({ [RACK]: 'r1' });
    });

    it('overlapping pool domains: the first listed pool that matches a node serves it, as Ceph-CSI picks (matchPoolToTopology)', function () {
      const east = { poolName: 'east', domainSegments: [{ domainLabel: 'region', value: 'east' }] };
      const eastZ1 = { poolName: 'east-z1', domainSegments: [{ domainLabel: 'region', value: 'east' }, { domainLabel: 'zone', value: 'z1' }] };
      const nodes = { bare: { [REGION]: 'east' }, z1: { [REGION]: 'east', [ZONE]: 'z1' }, z2: { [REGION]: 'east', [ZONE]: 'z2' } };
      const segments = Object.values(nodes);
      const servedBy = (list: (typeof east)[]): Record<string, string[]> => {
        const items = [...desiredItems([sc('ceph', { parameters: pools(list) })], segments, opts).items.values()].map((d) => d.item);
        return Object.fromEntries(Object.entries(nodes).map(([n, labels]) => [n, items.filter((i) => itemCoversNode(i, labels)).map((i) => i.pool)]));
      };
      // The zone pool first: the region pool serves what it leaves, and no object offers it on z1's nodes.
      expect(servedBy([eastZ1, east])).to.deep.equal({ bare: ['east'], z1: ['east-z1'], z2: ['east'] });
      // The region pool first: Ceph-CSI never reaches the zone pool, so it is not published, and that is a Warning.
      expect(servedBy([east, eastZ1])).to.deep.equal({ bare: ['east'], z1: ['east'], z2: ['east'] });
      const shadowed = desiredItems([sc('ceph', { parameters: pools([east, eastZ1]) })], segments, opts);
      expect(shadowed.problems.map((p) => p.reason)).to.deep.equal(['PoolNeverChosen']);
      expect(shadowed.problems[0]!.message).to.contain('pool east-z1 is never chosen');
    });

    it("property: every segment's nodes are offered exactly the pool Ceph-CSI would provision from, or none when no pool matches", function () {
      const label = fc.constantFrom(REGION, ZONE, RACK);
      const value = fc.constantFrom('a', 'b');
      const domain = fc.dictionary(label, value, { minKeys: 1, maxKeys: 3 });
      const segment = fc.dictionary(label, value, { maxKeys: 3 });
      fc.assert(
        fc.property(fc.array(domain, { minLength: 1, maxLength: 4 }), fc.uniqueArray(segment, { minLength: 1, maxLength: 6, selector: (s) => JSON.stringify(Object.entries(s).sort()) }), (domains, segs) => {
          // Each key given by its name part, as Ceph-CSI's classes write it.
          const list = domains.map((d, i) => ({ poolName: `p${i}`, keys: d, domainSegments: Object.entries(d).map(([k, v]) => ({ domainLabel: k.slice(k.indexOf('/') + 1), value: v })) }));
          const items = [...desiredItems([sc('ceph', { parameters: pools(list.map(({ poolName, domainSegments }) => ({ poolName, domainSegments }))) })], segs, opts).items.values()].map((d) => d.item);
          for (const s of segs) {
            const ceph = list.find((p) => Object.entries(p.keys).every(([k, v]) => s[k] === v))?.poolName;
            expect(items.filter((i) => itemCoversNode(i, s)).map((i) => i.pool), JSON.stringify(s)).to.deep.equal(ceph ? [ceph] : []);
          }
        }),
      );
    });

    it("a domainLabel names a topology key by the part after its prefix, as Ceph-CSI matches it: node label keys and the driver's CSINode keys alike", function () {
      const list = [
        { poolName: 'east-z1', domainSegments: [{ domainLabel: 'region', value: 'east' }, { domainLabel: 'zone', value: 'z1' }] },
        { poolName: 'east', domainSegments: [{ domainLabel: 'region', value: 'east' }] },
      ];
      const view = (segments: Record<string, string>[]) => [...desiredItems([sc('ceph', { parameters: pools(list) })], segments, opts).items.values()].map((d) => [d.item.pool, d.item.segment]);
      expect(view([{ [REGION]: 'east', [ZONE]: 'z1' }, { [REGION]: 'east', [ZONE]: 'z2' }])).to.deep.equal([
        ['east-z1', { [REGION]: 'east', [ZONE]: 'z1' }],
        // The region pool serves what the zone pool leaves: zone z2, published as that segment.
        ['east', { [REGION]: 'east', [ZONE]: 'z2' }],
      ]);
      // The keys Ceph-CSI's node plugin reports (topology.<driver>/<name>), as a CSINode lists them.
      const rbd = (zone: string): Record<string, string> => ({ 'topology.rbd.csi.ceph.com/region': 'east', 'topology.rbd.csi.ceph.com/zone': zone });
      expect(view([rbd('z1'), rbd('z2')])).to.deep.equal([
        ['east-z1', rbd('z1')],
        ['east', rbd('z2')],
      ]);
      // A pool serving its whole domain is published as the domain, in the segments' keys.
      expect(view([rbd('z1')]).map(([pool, segment]) => [pool, segment])).to.deep.equal([['east-z1', rbd('z1')]]);
      const regionOnly = [...desiredItems([sc('ceph', { parameters: pools([list[1]!]) })], [rbd('z1'), rbd('z2')], opts).items.values()].map((d) => d.item.segment);
      expect(regionOnly).to.deep.equal([{ 'topology.rbd.csi.ceph.com/region': 'east' }]);
      // An unprefixed label key is its own name.
      expect(view([{ rack: 'r1' }]).length).to.equal(0);
      expect([...desiredItems([sc('ceph', { parameters: pools([{ poolName: 'r1', domainSegments: [{ domainLabel: 'rack', value: 'r1' }] }]) })], [{ rack: 'r1' }], opts).items.values()].map((d) => d.item.segment)).to.deep.equal([{ rack: 'r1' }]);
    });

    it('a domainLabel written as a whole key (with its "/") is never chosen, as by Ceph-CSI, and a PoolNeverChosen problem says what to write', function () {
      const got = desiredItems([sc('ceph', { parameters: pools([{ poolName: 'p', domainSegments: [{ domainLabel: ZONE, value: 'z1' }] }]) })], segs, opts);
      expect(got.items.size).to.equal(0);
      expect(got.problems.map((p) => p.reason)).to.deep.equal(['PoolNeverChosen', 'NoPoolForDomain']);
      expect(got.problems[0]!.message).to.contain(`its domainLabel ${ZONE} has a "/"`).and.contain('(write "zone")');
    });

    it('a segment whose two keys share a name (a.example/zone, b.example/zone) is offered a pool only where both keys have its value (Ceph-CSI keeps one of them at random), and then per segment', function () {
      const cls = sc('ceph', { parameters: pools([{ poolName: 'p', domainSegments: [{ domainLabel: 'zone', value: 'z1' }] }]) });
      const agree = { [ZONE]: 'z1', 'example.com/zone': 'z1' };
      const differ = { [ZONE]: 'z1', 'example.com/zone': 'a' };
      const got = desiredItems([cls], [agree, differ], opts);
      expect([...got.items.values()].map((d) => d.item.segment)).to.deep.equal([agree]);
      expect(got.problems.map((p) => p.reason)).to.deep.equal(['NoPoolForDomain']);
      expect(got.problems[0]!.message).to.contain('example.com/zone=a');
    });

    it('a pool published as its domain covers no segment it does not serve: another key of the same name there makes the pick unsure, or another pool\'s', function () {
      const ZONE2 = 'example.com/zone';
      // Case A: p1's domain selector {zone:a} would also match the second segment, which p0 serves.
      const a = [{ poolName: 'p0', domainSegments: [{ domainLabel: 'region', value: 'a' }] }, { poolName: 'p1', domainSegments: [{ domainLabel: 'zone', value: 'a' }] }];
      const segA: Record<string, string>[] = [{ [ZONE]: 'a' }, { [REGION]: 'a', [ZONE]: 'a', [ZONE2]: 'b' }];
      const itemsA = [...desiredItems([sc('ceph', { parameters: pools(a) })], segA, opts).items.values()].map((d) => d.item);
      expect(segA.map((s) => itemsA.filter((i) => itemCoversNode(i, s)).map((i) => i.pool))).to.deep.equal([['p1'], ['p0']]);
      // Case B: the second segment's pick is unsure (zone is a or b): no pool there, and the first
      // segment's object does not reach it.
      const b = [{ poolName: 'p', domainSegments: [{ domainLabel: 'zone', value: 'z1' }] }];
      const segB: Record<string, string>[] = [{ [ZONE]: 'z1' }, { [ZONE]: 'z1', [ZONE2]: 'a' }];
      const gotB = desiredItems([sc('ceph', { parameters: pools(b) })], segB, opts);
      const itemsB = [...gotB.items.values()].map((d) => d.item);
      expect(segB.map((s) => itemsB.filter((i) => itemCoversNode(i, s)).map((i) => i.pool))).to.deep.equal([['p'], []]);
      expect(gotB.problems.map((p) => p.reason)).to.deep.equal(['NoPoolForDomain']);
      // An earlier pool that may match makes a later sure match unsure too.
      const c = [{ poolName: 'p0', domainSegments: [{ domainLabel: 'zone', value: 'a' }] }, { poolName: 'p1', domainSegments: [{ domainLabel: 'region', value: 'r' }] }];
      const segC = [{ [ZONE]: 'a', [ZONE2]: 'b', [REGION]: 'r' }];
      expect([...desiredItems([sc('ceph', { parameters: pools(c) })], segC, opts).items.values()]).to.deep.equal([]);
    });

    it("property: every segment's nodes are offered the pool Ceph-CSI picks whenever its pick is sure, and none where it is not", function () {
      const key = fc.constantFrom(REGION, ZONE, RACK, 'example.com/zone');
      const value = fc.constantFrom('a', 'b');
      const label = fc.constantFrom('region', 'zone', 'rack', ZONE);
      const domain = fc.dictionary(label, value, { minKeys: 1, maxKeys: 3 });
      const segment = fc.dictionary(key, value, { maxKeys: 4 });
      // Ceph-CSI's matchPoolToTopology with each name part read from one of the keys that carry it
      // (its map keeps one of them): every way of choosing.
      const readings = (s: Record<string, string>): Record<string, string>[] => {
        let out: Record<string, string>[] = [{}];
        const byName = new Map<string, string[]>();
        for (const k of Object.keys(s)) byName.set(k.slice(k.indexOf('/') + 1), [...(byName.get(k.slice(k.indexOf('/') + 1)) ?? []), k]);
        for (const [name, keys] of byName) out = out.flatMap((r) => keys.map((k) => ({ ...r, [name]: s[k]! })));
        return out;
      };
      fc.assert(
        fc.property(fc.array(domain, { minLength: 1, maxLength: 4 }), fc.uniqueArray(segment, { minLength: 1, maxLength: 6, selector: (s) => JSON.stringify(Object.entries(s).sort()) }), (domains, segs) => {
          const list = domains.map((d, i) => ({ poolName: `p${i}`, domainSegments: Object.entries(d).map(([domainLabel, v]) => ({ domainLabel, value: v })) }));
          const items = [...desiredItems([sc('ceph', { parameters: pools(list) })], segs, opts).items.values()].map((d) => d.item);
          for (const s of segs) {
            const picks = new Set(readings(s).map((names) => list.find((p) => p.domainSegments.every((d) => names[d.domainLabel] === d.value))?.poolName));
            const offered = items.filter((i) => itemCoversNode(i, s)).map((i) => i.pool);
            // A sure pick is offered; an unsure one (it depends on which key Ceph-CSI reads) is not.
            const sure = picks.size === 1 ? [...picks][0] : undefined;
            expect(offered, `${JSON.stringify(s)} of ${JSON.stringify(segs)}`).to.deep.equal(sure ? [sure] : []);
          }
        }),
      );
    });

    it('a pool published per segment it serves has one aggregated-status pool per segment, none rejected as a duplicate', function () {
      const east = { poolName: 'east', domainSegments: [{ domainLabel: 'region', value: 'east' }] };
      const eastZ1 = { poolName: 'east-z1', domainSegments: [{ domainLabel: 'region', value: 'east' }, { domainLabel: 'zone', value: 'z1' }] };
      const segments: Record<string, string>[] = [{ [REGION]: 'east' }, { [REGION]: 'east', [ZONE]: 'z1' }, { [REGION]: 'east', [ZONE]: 'z2' }];
      const items = [...desiredItems([sc('ceph', { parameters: pools([eastZ1, east]) })], segments, opts).items.values()];
      const entries = statusEntries(items, () => ({ available: GiB }));
      expect(entries.map((e) => e.pool)).to.deep.equal(['east topology.kubernetes.io/region=east', 'east topology.kubernetes.io/region=east,topology.kubernetes.io/zone=z2', 'east-z1']);
      const built = buildStorageStatus(entries, Date.parse('2026-11-27T12:00:00Z'), 60_000);
      expect(built.rejected).to.deep.equal([]);
      expect(built.storage[0]?.pools?.map((p) => p.name)).to.have.length(3);
    });

    it('an unreadable pool list freezes the class (objects kept) and is a problem, not a crash', function () {
      const got = desiredItems([sc('bad', { metadata: { name: 'bad', creationTimestamp: '2026-11-23T11:00:00Z' }, parameters: { topologyConstrainedPools: '[{"poolName":' } })], segs, opts);
      expect(got.items.size).to.equal(0);
      expect([...got.frozen]).to.deep.equal([['bad', Date.parse('2026-11-23T11:00:00Z')]]);
      expect(got.problems[0]).to.include({ reason: 'InvalidTopologyConstrainedPools' });
    });
  });

  describe('parseConstrainedPools', function () {
    const cases: { name: string; raw: string | undefined; want: RegExp | { name: string; domain: Record<string, string> }[] | undefined }[] = [
      { name: 'absent', raw: undefined, want: undefined },
      { name: 'valid, two levels', raw: JSON.stringify([{ poolName: 'a', domainSegments: [{ domainLabel: REGION, value: 'east' }, { domainLabel: ZONE, value: 'z1' }] }]), want: [{ name: 'a', domain: { [REGION]: 'east', [ZONE]: 'z1' } }] },
      { name: 'not JSON', raw: 'pool=a', want: /not JSON/ },
      { name: 'empty list', raw: '[]', want: /non-empty JSON list/ },
      { name: 'no poolName', raw: '[{"domainSegments":[{"domainLabel":"z","value":"1"}]}]', want: /poolName/ },
      { name: 'duplicate pool', raw: JSON.stringify([{ poolName: 'a', domainSegments: [{ domainLabel: ZONE, value: 'z1' }] }, { poolName: 'a', domainSegments: [{ domainLabel: ZONE, value: 'z2' }] }]), want: /listed twice/ },
      // Carried in a label and a node selector: what the API server would refuse is refused here, with the reason.
      { name: 'pool name too long for its label', raw: JSON.stringify([{ poolName: 'p'.repeat(64), domainSegments: [{ domainLabel: ZONE, value: 'z1' }] }]), want: /longer than 63 characters/ },
      { name: 'pool name with a slash', raw: JSON.stringify([{ poolName: 'rbd/pool', domainSegments: [{ domainLabel: ZONE, value: 'z1' }] }]), want: /alphanumerics/ },
      { name: 'domain value with a space', raw: JSON.stringify([{ poolName: 'a', domainSegments: [{ domainLabel: ZONE, value: 'z 1' }] }]), want: /alphanumerics/ },
      { name: 'domain label that is no label key', raw: JSON.stringify([{ poolName: 'a', domainSegments: [{ domainLabel: 'a/b/c', value: 'z1' }] }]), want: /more than one/ },
      { name: 'no domain', raw: '[{"poolName":"a","domainSegments":[]}]', want: /domainSegments/ },
      { name: 'empty value', raw: '[{"poolName":"a","domainSegments":[{"domainLabel":"z","value":""}]}]', want: /non-empty domainLabel and value/ },
      { name: 'label twice', raw: JSON.stringify([{ poolName: 'a', domainSegments: [{ domainLabel: ZONE, value: 'z1' }, { domainLabel: ZONE, value: 'z2' }] }]), want: /given twice/ },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const got = parseConstrainedPools(c.raw === undefined ? {} : { topologyConstrainedPools: c.raw });
        if (c.want === undefined) expect(got).to.equal(undefined);
        else if (c.want instanceof RegExp) expect(got).to.have.property('error').that.matches(c.want);
        else expect(got).to.deep.equal({ pools: c.want });
      });
    }
  });

  describe('planItem: write only what changed', function () {
    const item: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
    it('creates when there is no object (also after someone deleted ours)', function () {
      const [a] = planItem(id, item, { available: 10n * GiB }, []);
      expect(a?.kind).to.equal('create');
      expect(a && 'object' in a ? a.object : undefined).to.deep.include({ storageClassName: 'fast', capacity: '10Gi', nodeTopology: { matchLabels: { [ZONE]: 'z1' } } });
      expect(a && 'object' in a ? a.object.metadata?.labels : undefined).to.deep.equal({ 'csi.storage.k8s.io/drivername': DRIVER, 'csi.storage.k8s.io/managed-by': 'topovol-capacity' });
      expect(a && 'object' in a ? a.object.metadata?.ownerReferences : undefined).to.deep.equal([id.owner]);
    });
    it('nothing when the object already says it, whatever the quantity spelling', function () {
      expect(planItem(id, item, { available: 10n * GiB }, [existing(item, '10Gi')])).to.deep.equal([]);
      expect(planItem(id, item, { available: 10n * GiB }, [existing(item, '10737418240')])).to.deep.equal([]);
    });
    it('updates capacity, maximumVolumeSize (set and unset) and a missing owner', function () {
      const cases: { obj: CSIStorageCapacity; m: { available: bigint; maximumVolumeSize?: bigint }; changed: string[] }[] = [
        { obj: existing(item, '10Gi'), m: { available: 9n * GiB }, changed: ['capacity'] },
        { obj: existing(item, '10Gi'), m: { available: 10n * GiB, maximumVolumeSize: 2n * GiB }, changed: ['maximumVolumeSize'] },
        { obj: existing(item, '10Gi', { max: '2Gi' }), m: { available: 10n * GiB }, changed: ['maximumVolumeSize'] },
        { obj: existing(item, '10Gi', { owner: false }), m: { available: 10n * GiB }, changed: ['ownerReferences'] },
      ];
      for (const c of cases) {
        const acts = planItem(id, item, c.m, [c.obj]);
        expect(acts).to.have.length(1);
        expect(acts[0]).to.include({ kind: 'update' });
        expect(acts[0] && 'changed' in acts[0] ? acts[0].changed : []).to.deep.equal(c.changed);
        expect(acts[0] && 'object' in acts[0] ? acts[0].object.metadata?.resourceVersion : '').to.equal('7');
      }
    });
    it('a new owner (another level or pod) replaces the controller reference, never a second controller: true', function () {
      const obj = existing(item, '10Gi');
      const gc = { apiVersion: 'v1', kind: 'ConfigMap', name: 'keep-me', uid: 'cm-uid' };
      obj.metadata!.ownerReferences = [{ apiVersion: 'v1', kind: 'Pod', name: 'capacity-5d9-abc', uid: 'old-pod-uid', controller: true }, gc];
      const [a] = planItem(id, item, { available: 10n * GiB }, [obj]);
      expect(a && 'changed' in a ? a.changed : []).to.deep.equal(['ownerReferences']);
      const refs = a && 'object' in a ? (a.object.metadata?.ownerReferences ?? []) : [];
      expect(refs.filter((r) => r.controller)).to.deep.equal([id.owner]);
      expect(refs).to.deep.include(gc);
      // Already ours: nothing to write.
      expect(planItem(id, item, { available: 10n * GiB }, [{ ...obj, metadata: { ...obj.metadata, ownerReferences: [gc, { ...id.owner! }] } }])).to.deep.equal([]);
    });
    it('keeps the oldest of duplicates and deletes the others', function () {
      const acts = planItem(id, item, { available: 10n * GiB }, [existing(item, '10Gi', { name: 'csisc-new', created: '2026-11-23T11:00:00Z' }), existing(item, '10Gi', { name: 'csisc-old' })]);
      expect(acts.map((a) => [a.kind, a.object.metadata?.name])).to.deep.equal([['delete', 'csisc-new']]);
    });
  });

  describe('planObsolete', function () {
    const keep: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
    const gone: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z2' }, pool: '' };
    const frozen: CapacityItem = { storageClassName: 'bad', segment: { [ZONE]: 'z1' }, pool: '' };
    const pooled: CapacityItem = { storageClassName: 'ceph', segment: { [ZONE]: 'z1' }, pool: 'p1' };
    it('deletes objects of segments, classes and pools no longer desired; keeps frozen classes', function () {
      const objs = [existing(keep, '1Gi', { name: 'k' }), existing(gone, '1Gi', { name: 'g' }), existing(frozen, '1Gi', { name: 'f' }), existing(pooled, '1Gi', { name: 'p' })];
      expect(objs[3]!.metadata?.labels?.[LABEL_POOL]).to.equal('p1');
      const acts = planObsolete(new Set([itemKey(keep), itemKey({ ...pooled, pool: 'p2' })]), objs, new Map([['bad', Date.parse('2026-11-23T09:00:00Z')]]));
      expect(acts.map((a) => a.object.metadata?.name)).to.deep.equal(['g', 'p']);
    });
    it('a frozen class keeps only its own objects: those of an earlier class of that name (deleted and re-created, unreadable now) go', function () {
      const objs = [existing(frozen, '1Gi', { name: 'earlier', created: '2026-11-23T10:00:00Z' }), existing(frozen, '1Gi', { name: 'its-own', created: '2026-11-23T12:00:00Z' }), existing(frozen, '1Gi', { name: 'same-second', created: '2026-11-23T11:00:00Z' })];
      const acts = planObsolete(new Set(), objs, new Map([['bad', Date.parse('2026-11-23T11:00:00Z')]]));
      expect(acts.map((a) => a.object.metadata?.name)).to.deep.equal(['earlier']);
      // A class without a creation time (NaN): all kept, as before.
      expect(planObsolete(new Set(), objs, new Map([['bad', Number.NaN]]))).to.deep.equal([]);
    });
    it('keeps an object whose item was only re-cut (deeper keys; a pool\'s segments) until every replacement exists', function () {
      const region: CapacityItem = { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: '' };
      const regionExclusive: CapacityItem = { ...region, absent: [ZONE] };
      const poolDomain: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'east' }, pool: 'east' };
      const poolPart: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'east' };
      const objs = [existing(region, '1Gi', { name: 'r' }), existing(poolDomain, '1Gi', { name: 'p' }), existing(gone, '1Gi', { name: 'g' })];
      const desired = new Set([itemKey(regionExclusive), itemKey(poolPart)]);
      const waiting = new Set([itemBaseKey(regionExclusive), itemBaseKey(poolPart)]);
      expect(planObsolete(desired, objs, new Map(), waiting).map((a) => a.object.metadata?.name), 'replacements not created yet').to.deep.equal(['g']);
      expect(planObsolete(desired, objs, new Map(), new Set()).map((a) => a.object.metadata?.name), 'once they exist').to.deep.equal(['r', 'p', 'g']);
    });
    it('keeps a re-cut pool\'s old object only while no other pool of its class may serve nodes it selects', function () {
      const poolDomain: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'east' }, pool: 'east' };
      const poolPart: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'east', [ZONE]: 'z2' }, pool: 'east' };
      const earlierInZ1: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'east', [ZONE]: 'z1' }, pool: 'z1' };
      const elsewhere: CapacityItem = { storageClassName: 'ceph', segment: { [REGION]: 'west' }, pool: 'west' };
      const objs = [existing(poolDomain, '1Gi', { name: 'p' })];
      const waiting = new Set([itemBaseKey(poolPart)]);
      const plan = (items: CapacityItem[]): (string | undefined)[] => planObsolete(new Set(items.map(itemKey)), objs, new Map(), waiting, new Map(), items).map((a) => a.object.metadata?.name);
      expect(plan([poolPart, elsewhere]), 'another pool, in another region').to.deep.equal([]);
      expect(plan([poolPart, earlierInZ1]), 'another pool now serves z1, inside the old selector').to.deep.equal(['p']);
    });
  });

  describe('volumeAffectsItem (which refreshes a PV event causes)', function () {
    const item: CapacityItem = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
    const pv = (cls: string, zones?: string[]): PersistentVolume => ({
      spec: { storageClassName: cls, ...(zones ? { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: zones }] }] } } } : {}) },
    });
    const cases: [string, PersistentVolume, boolean][] = [
      ['same class, same zone', pv('fast', ['z1']), true],
      ['same class, other zone', pv('fast', ['z2']), false],
      ['same class, no affinity', pv('fast'), true],
      ['other class, same zone (classes may share the storage)', pv('slow', ['z1']), true],
      ['other class, other zone', pv('slow', ['z2']), false],
    ];
    for (const [name, v, want] of cases) it(name, () => expect(volumeAffectsItem(v, item)).to.equal(want));
  });

  describe('itemsToRefreshAfterFailure (a failed provisioning refreshes what the scheduler trusted)', function () {
    const d = (item: CapacityItem): [string, { item: CapacityItem }] => [itemKey(item), { item }];
    const z1 = { storageClassName: 'fast', segment: { [ZONE]: 'z1' }, pool: '' };
    const z2 = { storageClassName: 'fast', segment: { [ZONE]: 'z2' }, pool: '' };
    const slow = { storageClassName: 'slow', segment: { [ZONE]: 'z1' }, pool: '' };
    const region = { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: '', absent: [ZONE] };
    const pool = { storageClassName: 'fast', segment: { [REGION]: 'east' }, pool: 'p1' };
    const items = [d(z1), d(z2), d(slow), d(region), d(pool)];
    const cases: [string, string, Record<string, string> | undefined, CapacityItem[]][] = [
      ['the node\'s segment of the claim\'s class, and a pool whose domain holds the node', 'fast', { [REGION]: 'east', [ZONE]: 'z1' }, [z1, pool]],
      ['a region-only node: the region segment, not the zones', 'fast', { [REGION]: 'east' }, [region, pool]],
      ['no node known: every item of the class', 'fast', undefined, [z1, z2, region, pool]],
      ['another class: nothing of this one', 'other', { [ZONE]: 'z1' }, []],
    ];
    for (const [name, cls, labels, want] of cases) it(name, () => expect(itemsToRefreshAfterFailure(items, cls, labels)).to.deep.equal(want.map(itemKey)));
  });

  describe('keys', function () {
    it('item keys round-trip and ignore label order', function () {
      const a: CapacityItem = { storageClassName: 'fast', pool: 'p', segment: { [ZONE]: 'z1', [REGION]: 'east' } };
      const b: CapacityItem = { storageClassName: 'fast', pool: 'p', segment: { [REGION]: 'east', [ZONE]: 'z1' } };
      expect(itemKey(a)).to.equal(itemKey(b));
      expect(parseItemKey(itemKey(a))).to.deep.equal(b);
      const c: CapacityItem = { ...b, absent: [ZONE] };
      expect(itemKey(c)).to.not.equal(itemKey(b));
      expect(parseItemKey(itemKey(c))).to.deep.equal(c);
    });
  });
});
