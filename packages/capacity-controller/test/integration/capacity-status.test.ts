import { expect } from 'chai';
import { isInvalid, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import {
  CapacityStatusWriter,
  CSIDriverCapacities,
  CSIDriverCapacityShards,
  DEFAULT_STATUS_SHARDS,
  LABEL_CAPACITY_DRIVER,
  OBJECT_FIELD_MANAGER,
  perNodeFieldManager,
  runPerNodeWriter,
  shardName,
  shardOf,
  SUMMARY_FIELD_MANAGER,
} from '../../src/status/index.js';
import type { CapacityEntry, CSIDriverCapacity, CSIDriverCapacityShard } from '../../src/status/index.js';
import { managedFieldsOf, ownsPool } from '../../src/status/managed-fields.js';
import { createCSIDriver, deleteDriverStatus, driverStatus, poolsOf, statusClients, statusWrites as writes, uniqueDriver } from './status-helpers.js';

/** The parts of a CustomResourceDefinition the test reads back. */
interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
}
interface Crd extends KubeObject {
  spec: {
    scope: string;
    names: { shortNames?: string[]; categories?: string[] };
    versions: { name: string; subresources?: { status?: object }; additionalPrinterColumns?: { name: string; jsonPath: string }[]; schema?: { openAPIV3Schema?: Schema } }[];
  };
  status?: { conditions?: { type: string; status: string }[] };
}

const getCdc = (client: KubeClient, name: string): Promise<CSIDriverCapacity> => client.get<CSIDriverCapacity>(CSIDriverCapacities, name);

// The aggregated status and its per-node mode on the real kube-apiserver: the CSIDriverCapacity CRD from
// config/crd and the server-side-apply writers of src/status.
describe('capacity status: CSIDriverCapacity CRD and writers (real API server)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  // The writers run as the capacity loop's ServiceAccount (generated RBAC); the test reads as admin.
  let writerClient: KubeClient;

  before(async function () {
    ({ admin, writerClient } = await statusClients());
  });

  describe('the CRD', function () {
    it('head and shard kinds are cluster-scoped with short names, categories, status subresource, list-map markers and printer columns', async function () {
      const crd = await admin.get<Crd>(Resources.customResourceDefinitions, 'csidrivercapacities.topovol.io');
      expect(crd.spec.scope).to.equal('Cluster');
      expect(crd.spec.names.shortNames).to.deep.equal(['cdc']);
      expect(crd.spec.names.categories).to.deep.equal(['topovol', 'storage']);
      const v = crd.spec.versions.find((x) => x.name === 'v1alpha1')!;
      expect(v.subresources?.status).to.deep.equal({});
      expect((v.additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath])).to.deep.equal([
        ['Driver', '.spec.driverName'],
        ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
        ['Classes', '.status.classCount'],
        ['Pools', '.status.poolCount'],
        ['Total', '.status.totalCapacity'],
        ['Age', '.metadata.creationTimestamp'],
        ['Reason', '.status.conditions[?(@.type=="Ready")].reason'],
      ]);
      const storage = v.schema!.openAPIV3Schema!.properties!.status!.properties!.storage!;
      expect(storage['x-kubernetes-list-type']).to.equal('map');
      expect(storage['x-kubernetes-list-map-keys']).to.deep.equal(['storageClassName']);
      const pools = storage.items!.properties!.pools!;
      expect(pools['x-kubernetes-list-type']).to.equal('map');
      expect(pools['x-kubernetes-list-map-keys']).to.deep.equal(['name']);
      const shards = v.schema!.openAPIV3Schema!.properties!.status!.properties!.shards!;
      expect([shards['x-kubernetes-list-type'], shards['x-kubernetes-list-map-keys']]).to.deep.equal(['map', ['shard']]);

      const shardCrd = await admin.get<Crd>(Resources.customResourceDefinitions, 'csidrivercapacityshards.topovol.io');
      expect(shardCrd.spec.scope).to.equal('Cluster');
      expect(shardCrd.spec.names.shortNames).to.deep.equal(['cdcs']);
      expect(shardCrd.spec.names.categories).to.deep.equal(['topovol', 'storage']);
      const sv = shardCrd.spec.versions.find((x) => x.name === 'v1alpha1')!;
      expect(sv.subresources?.status).to.deep.equal({});
      expect((sv.additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath])).to.deep.equal([
        ['Driver', '.spec.driverName'],
        ['Shard', '.spec.shard'],
        ['Age', '.metadata.creationTimestamp'],
      ]);
      const shardStorage = sv.schema!.openAPIV3Schema!.properties!.status!.properties!.storage!;
      expect([shardStorage['x-kubernetes-list-type'], shardStorage['x-kubernetes-list-map-keys']]).to.deep.equal(['map', ['storageClassName']]);
      const shardPools = shardStorage.items!.properties!.pools!;
      expect([shardPools['x-kubernetes-list-type'], shardPools['x-kubernetes-list-map-keys']]).to.deep.equal(['map', ['name']]);
    });

    it('rejects invalid objects at the API server', async function () {
      const name = uniqueDriver('invalid');
      const expectInvalid = async (what: string, fn: () => Promise<unknown>, message: RegExp): Promise<void> => {
        try {
          await fn();
        } catch (err) {
          expect(isInvalid(err), `${what}: ${String(err)}`).to.equal(true);
          expect(String(err)).to.match(message);
          return;
        }
        expect.fail(`${what} was accepted`);
      };
      const base = { apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacity' };
      await expectInvalid('name differs from driverName', () => admin.create(CSIDriverCapacities, { ...base, metadata: { name }, spec: { driverName: 'other.example.com' } }), /spec.driverName/);
      await admin.create(CSIDriverCapacities, { ...base, metadata: { name }, spec: { driverName: name } });
      const status = (pool: Record<string, unknown>, storageClassName = 'fast'): CSIDriverCapacity => ({ ...base, metadata: { name }, status: { storage: [{ storageClassName, pools: [{ name: 'p', ...pool }] }] } });
      const apply = (obj: CSIDriverCapacity) => () => admin.apply(CSIDriverCapacities, obj, 'test', { subresource: 'status', force: true });
      await expectInvalid('both nodeTopology and nodeList', apply(status({ nodeTopology: { matchLabels: { zone: 'a' } }, nodeList: ['n1'], capacity: '1Gi' })), /nodeTopology or nodeList, not both/);
      await expectInvalid('bad capacity', apply(status({ capacity: '10 GB' })), /capacity/);
      await expectInvalid('negative maximumVolumeSize', apply(status({ capacity: '1Gi', maximumVolumeSize: '-1' })), /maximumVolumeSize/);
      await expectInvalid('bad expiryTime', apply(status({ capacity: '1Gi', expiryTime: 'tomorrow' })), /expiryTime/);
      await expectInvalid('bad class name', apply(status({ capacity: '1Gi' }, '<other>')), /storageClassName/);
      await expectInvalid('empty pool name', apply({ ...base, metadata: { name }, status: { storage: [{ storageClassName: 'fast', pools: [{ name: '' }] }] } }), /name/);
      // The control: integer and string quantities, either selector alone.
      await apply(status({ nodeList: ['n1'], capacity: 1024, maximumVolumeSize: '1.5Gi', expiryTime: '2030-01-01T00:00:00Z' }))();
      await admin.delete(CSIDriverCapacities, name);

      // A shard is named <driver>-<shard>; the same pool rules hold in it.
      const shard = { apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacityShard' };
      for (const [what, metaName, shardIndex] of [
        ['another shard index', `${name}-3`, 2],
        ['another driver', `x${name}-2`, 2],
        ['a padded index', `${name}-02`, 2],
      ] as const) {
        await expectInvalid(`shard named after ${what}`, () => admin.create(CSIDriverCapacityShards, { ...shard, metadata: { name: metaName }, spec: { driverName: name, shard: shardIndex } }), /<spec.driverName>-<spec.shard>/);
      }
      await admin.create(CSIDriverCapacityShards, { ...shard, metadata: { name: `${name}-2` }, spec: { driverName: name, shard: 2 } });
      const shardStatus = (pool: Record<string, unknown>): CSIDriverCapacityShard => ({ ...shard, metadata: { name: `${name}-2` }, status: { storage: [{ storageClassName: 'fast', pools: [{ name: 'p', ...pool }] }] } });
      await expectInvalid('shard pool with both selectors', () => admin.apply(CSIDriverCapacityShards, shardStatus({ nodeTopology: { matchLabels: { zone: 'a' } }, nodeList: ['n1'], capacity: '1Gi' }), 'test', { subresource: 'status', force: true }), /nodeTopology or nodeList, not both/);
      await expectInvalid('shard index changed', () => admin.patch(CSIDriverCapacityShards, `${name}-2`, undefined, 'merge', { spec: { shard: 3 } }), /immutable/);
      await admin.apply(CSIDriverCapacityShards, shardStatus({ nodeList: ['n1'], capacity: '1Gi' }), 'test', { subresource: 'status', force: true });
      await admin.delete(CSIDriverCapacityShards, `${name}-2`);
    });
  });

  describe('CapacityStatusWriter (central mode)', function () {
    const entries = (capacity: string): CapacityEntry[] => [
      { storageClassName: 'fast', pool: 'zone-a', nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': 'a' } }, capacity, maximumVolumeSize: '1Gi' },
      { storageClassName: 'fast', pool: 'zone-b', nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': 'b' } }, capacity: '3Gi' },
      { storageClassName: '<ephemeral>', pool: 'everywhere', capacity: '512Mi' },
    ];
    const ready = [{ type: 'Ready', status: 'True' as const, reason: 'CapacityKnown', message: 'all segments answered' }];

    /** resourceVersion of the head and of every shard: unchanged means nothing was written. */
    const versions = async (name: string): Promise<string[]> => {
      const { head, shards } = await driverStatus(admin, name);
      return [head, ...shards].map((o) => `${o?.metadata?.name}@${o?.metadata?.resourceVersion}`);
    };
    const classes = (storage: { storageClassName: string; pools?: { name: string }[] }[]): [string, string[]][] => storage.map((s) => [s.storageClassName, (s.pools ?? []).map((p) => p.name)]);

    it('creates head and shards owned by the CSIDriver, writes only on change, keeps condition times, fills the printer columns', async function () {
      const name = uniqueDriver('central');
      const uid = await createCSIDriver(admin, name);
      let t = Date.now();
      const writer = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 600_000, now: () => t });
      expect(await writer.publish(entries('2Gi'), ready)).to.deep.equal({ wrote: true });
      const first = await driverStatus(admin, name);
      const owner = [{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }];
      expect(first.head!.metadata!.ownerReferences).to.deep.equal(owner);
      expect(first.head!.spec).to.deep.equal({ driverName: name });
      expect(classes(first.storage)).to.deep.equal([
        ['<ephemeral>', ['everywhere']],
        ['fast', ['zone-a', 'zone-b']],
      ]);
      // Each pool in the shard its name hashes to, and each shard named, labelled and owned alike.
      const wantShards = [...new Set(['everywhere', 'zone-a', 'zone-b'].map((p) => shardOf(p, DEFAULT_STATUS_SHARDS)))].sort((a, b) => a - b);
      expect(first.shards.map((o) => o.spec)).to.deep.equal(wantShards.map((i) => ({ driverName: name, shard: i })));
      for (const o of first.shards) {
        expect(o.metadata).to.deep.include({ name: shardName(name, o.spec!.shard), ownerReferences: owner });
        expect(o.metadata!.labels).to.deep.equal({ [LABEL_CAPACITY_DRIVER]: name });
        for (const p of (o.status?.storage ?? []).flatMap((c) => c.pools ?? [])) expect(shardOf(p.name, DEFAULT_STATUS_SHARDS), p.name).to.equal(o.spec!.shard);
      }
      expect(first.head!.status!.storage ?? [], 'no pool on the head').to.deep.equal([]);
      expect(first.head!.status!.shards!.map((e) => e.shard)).to.deep.equal(wantShards);
      expect(first.head!.status).to.deep.include({ classCount: 2, poolCount: 3, totalCapacity: '5Gi' });
      const cond = first.head!.status!.conditions![0]!;

      // Nothing changed (and expiry far away): no write at all, to any object.
      t += 60_000;
      const before = await versions(name);
      expect(await writer.publish(entries('2Gi'), ready)).to.deep.equal({ wrote: false });
      expect(await writer.pruneExpired()).to.equal(0);
      expect(await versions(name)).to.deep.equal(before);

      // A capacity change is written; the unchanged condition keeps its transition time.
      t += 60_000;
      expect(await writer.publish(entries('4Gi'), [{ ...ready[0]!, message: 'still fine' }])).to.deep.equal({ wrote: true });
      const second = await driverStatus(admin, name);
      expect(second.storage.find((s) => s.storageClassName === 'fast')!.pools![0]!.capacity).to.equal('4Gi');
      expect(second.head!.status!.conditions![0]).to.deep.include({ message: 'still fine', lastTransitionTime: cond.lastTransitionTime });
      expect(second.head!.status!.totalCapacity).to.equal('7Gi');

      // Within half of expiryMs of the expiry: refreshed although unchanged.
      t += 300_001;
      expect(await writer.publish(entries('4Gi'), [{ ...ready[0]!, message: 'still fine' }])).to.deep.equal({ wrote: true });

      // What kubectl get prints (server-side Table from the printer columns).
      const table = await admin.request<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }>('GET', `/apis/topovol.io/v1alpha1/csidrivercapacities/${name}`, {
        headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      });
      expect(table.columnDefinitions.map((c) => c.name)).to.deep.equal(['Name', 'Driver', 'Ready', 'Classes', 'Pools', 'Total', 'Age', 'Reason']);
      const cells = table.rows[0]!.cells;
      expect([...cells.slice(0, 6), cells[7]]).to.deep.equal([name, name, 'True', 2, 3, '7Gi', 'CapacityKnown']);

      // A dropped class is released (SSA removes what the manager no longer applies), and so are
      // the shard entries of shards left empty.
      expect(await writer.publish(entries('4Gi').filter((e) => e.storageClassName === 'fast'), [])).to.deep.equal({ wrote: true });
      const third = await driverStatus(admin, name);
      expect(classes(third.storage)).to.deep.equal([['fast', ['zone-a', 'zone-b']]]);
      expect(third.head!.status!.conditions ?? []).to.deep.equal([]);
      expect(third.head!.status).to.deep.include({ classCount: 1, poolCount: 2 });
      expect(third.head!.status!.shards!.map((e) => e.shard)).to.deep.equal([...new Set(['zone-a', 'zone-b'].map((p) => shardOf(p, DEFAULT_STATUS_SHARDS)))].sort((a, b) => a - b));
      await deleteDriverStatus(admin, name);
      await admin.delete(Resources.csiDrivers, name);
    });

    it('objects deleted by hand are recreated; a CSIDriver appearing later becomes the owner of each', async function () {
      const name = uniqueDriver('late');
      let t = Date.now();
      const writer = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 60_000, now: () => t });
      await writer.publish(entries('1Gi'), []);
      expect((await getCdc(admin, name)).metadata!.ownerReferences ?? []).to.deep.equal([]);

      await deleteDriverStatus(admin, name);
      expect(await writer.publish(entries('1Gi'), [])).to.deep.equal({ wrote: true });
      expect(poolsOf((await driverStatus(admin, name)).storage, 'fast')).to.deep.equal(['zone-a', 'zone-b']);

      const uid = await createCSIDriver(admin, name);
      t += 60_000; // the CSIDriver lookup happens at most once per expiry period
      await writer.publish(entries('1Gi'), []);
      const { head, shards } = await driverStatus(admin, name);
      for (const o of [head!, ...shards]) expect(o.metadata!.ownerReferences, o.metadata!.name).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }]);
      expect(managedFieldsOf(head!).map((m) => m.manager)).to.include.members([OBJECT_FIELD_MANAGER, SUMMARY_FIELD_MANAGER]);
      for (const o of shards) expect(managedFieldsOf(o).map((m) => m.manager)).to.include.members([OBJECT_FIELD_MANAGER, 'topovol-capacity']);

      // The CSIDriver deleted and created again (a driver re-installed): the garbage collector
      // deletes the objects it owned; those created again must name the new uid, not the cached one
      // (the collector would delete them again, every round, for an expiry period).
      await admin.delete(Resources.csiDrivers, name);
      const uid2 = await createCSIDriver(admin, name);
      await deleteDriverStatus(admin, name);
      await writer.publish(entries('1Gi'), []);
      const again = await driverStatus(admin, name);
      for (const o of [again.head!, ...again.shards]) expect(o.metadata!.ownerReferences, o.metadata!.name).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid: uid2 }]);
      await deleteDriverStatus(admin, name);
      await admin.delete(Resources.csiDrivers, name);
    });
  });

  describe('a restarted central writer', function () {
    it('keeps the pools it published, with their expiry, until it has figures; a pool it no longer tracks is released', async function () {
      const name = uniqueDriver('restart');
      const entries: CapacityEntry[] = ['z1', 'z2'].map((z) => ({ storageClassName: 'fast', pool: `zone=${z}`, nodeTopology: { matchLabels: { zone: z } }, capacity: '5Gi' }));
      const before = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 600_000 });
      await before.publish(entries, []);
      const published = await driverStatus(admin, name);
      // The new process: no figure yet (its driver has not answered), both pools still tracked.
      const after = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 600_000 });
      await after.publish([], [], () => true);
      const kept = await driverStatus(admin, name);
      expect(kept.storage).to.deep.equal(published.storage);
      // z2 is no longer tracked (its nodes went): released at once, as before.
      await after.publish([], [], (_cls, pool) => pool === 'zone=z1');
      expect(poolsOf((await driverStatus(admin, name)).storage, 'fast')).to.deep.equal(['zone=z1']);
      await deleteDriverStatus(admin, name);
    });
  });

  describe('pruning other writers\' entries', function () {
    it('an owner refreshing between the pruner\'s read and write wins (resourceVersion precondition); afterwards the entry and its manager go', async function () {
      const name = uniqueDriver('race');
      const t0 = Date.now();
      let tw = t0;
      // One shard, so that both pools share an object.
      const common = { driverName: name, expiryMs: 10_000, shards: 1 };
      const node = { storageClassName: '<ephemeral>', pool: 'n1', nodeList: ['n1'], capacity: '1Gi' };
      const owner = new CapacityStatusWriter(writerClient, { ...common, fieldManager: perNodeFieldManager('n1'), now: () => tw, summarizeOnPublish: false });
      const other = new CapacityStatusWriter(writerClient, { ...common, fieldManager: perNodeFieldManager('n2'), now: () => t0 + 100_000, summarizeOnPublish: false });
      await owner.publish([node], []);
      await other.publish([{ ...node, pool: 'n2', nodeList: ['n2'] }], []);

      // The pruner's clock says n1 expired; right after its read (the list of shards), n1's writer refreshes.
      let hooked = false;
      const racing = new Proxy(writerClient, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (prop !== 'list' || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          return async (...args: Parameters<KubeClient['list']>) => {
            const got = await target.list(...args);
            if (!hooked && args[0] === CSIDriverCapacityShards) {
              hooked = true;
              tw = t0 + 30_000;
              expect(await owner.publish([node], [])).to.deep.equal({ wrote: true });
            }
            return got;
          };
        },
      });
      let tp = t0 + 20_000;
      const pruner = new CapacityStatusWriter(racing, { ...common, fieldManager: 'topovol-capacity', now: () => tp });
      const conflictsBefore = await writes('prune', 'conflict');
      expect(await pruner.pruneExpired()).to.equal(0);
      expect(hooked).to.equal(true);
      expect(await writes('prune', 'conflict')).to.be.greaterThan(conflictsBefore);
      expect(poolsOf((await driverStatus(admin, name)).storage, '<ephemeral>')).to.deep.equal(['n1', 'n2']);

      // Now really stale: pruned, and n1's manager no longer listed; n2 untouched.
      tp = t0 + 50_000;
      expect(await pruner.pruneExpired()).to.equal(1);
      const { head, shards } = await driverStatus(admin, name);
      expect(shards).to.have.length(1);
      expect(poolsOf(shards[0]!.status?.storage ?? [], '<ephemeral>')).to.deep.equal(['n2']);
      const managers = managedFieldsOf(shards[0]!).map((m) => m.manager);
      expect(managers).to.not.include(perNodeFieldManager('n1'));
      expect(managers).to.include(perNodeFieldManager('n2'));
      expect(head!.status).to.deep.include({ poolCount: 1, classCount: 1 });
      await deleteDriverStatus(admin, name);
    });

    it('expired pools written by a plain update (no applier) are removed by JSON patch, in a shard and on the head (from before sharding)', async function () {
      const name = uniqueDriver('update');
      const expired = new Date(Date.now() - 60_000).toISOString();
      const fresh = new Date(Date.now() + 600_000).toISOString();
      const storage = [{ storageClassName: 'fast', pools: [{ name: 'old', capacity: '1Gi', expiryTime: expired }, { name: 'new', capacity: '1Gi', expiryTime: fresh }] }];
      const base = { apiVersion: 'topovol.io/v1alpha1' };
      await admin.create(CSIDriverCapacities, { ...base, kind: 'CSIDriverCapacity', metadata: { name }, spec: { driverName: name } });
      await admin.patch(CSIDriverCapacities, name, undefined, 'merge', { status: { storage } }, { subresource: 'status', fieldManager: 'kubectl-edit' });
      const shard = shardName(name, 5);
      await admin.create(CSIDriverCapacityShards, { ...base, kind: 'CSIDriverCapacityShard', metadata: { name: shard, labels: { [LABEL_CAPACITY_DRIVER]: name } }, spec: { driverName: name, shard: 5 } });
      await admin.patch(CSIDriverCapacityShards, shard, undefined, 'merge', { status: { storage } }, { subresource: 'status', fieldManager: 'kubectl-edit' });
      const pruner = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 60_000 });
      expect(await pruner.pruneExpired()).to.equal(2);
      const { head, shards } = await driverStatus(admin, name);
      expect(poolsOf(head!.status?.storage ?? [], 'fast')).to.deep.equal(['new']);
      expect(poolsOf(shards[0]!.status?.storage ?? [], 'fast')).to.deep.equal(['new']);
      // The totals count the shard only: the head's own pools are a leftover, not data.
      expect(head!.status).to.deep.include({ classCount: 1, poolCount: 1, totalCapacity: '1Gi' });
      await deleteDriverStatus(admin, name);
    });
  });

  describe('per-node mode (acceptance 4)', function () {
    it('50 concurrent writers: no conflicts, one pool per node under its own field manager in its shard; a stopped writer\'s pool expires and is pruned', async function () {
      this.timeout(200_000);
      const name = uniqueDriver('nodes');
      const uid = await createCSIDriver(admin, name);
      // Eight shards: several writers share each, so a shard's pruner hands over within a shard.
      const SHARDS = 8;
      const nodes = Array.from({ length: 50 }, (_, i) => `node-${String(i).padStart(2, '0')}`);
      const before = { conflict: await writes('publish', 'conflict'), error: await writes('publish', 'error'), createError: await writes('create', 'error') };
      const stops = new Map<string, AbortController>();
      const running = nodes.map((nodeName, i) => {
        const ac = new AbortController();
        stops.set(nodeName, ac);
        return runPerNodeWriter({
          client: writerClient,
          driverName: name,
          nodeName,
          refreshMs: 4_000,
          // Entries are refreshed once half of this is left: 12 s of slack for a slow API server
          // (2 cores shared with the rest of the suite) before a live writer's pool could lapse.
          expiryMs: 24_000,
          shards: SHARDS,
          capacity: () => Promise.resolve({ capacity: `${i + 1}Gi`, maximumVolumeSize: '1Gi' }),
          signal: ac.signal,
        });
      });
      const shardOfNode = (st: { shards: CSIDriverCapacityShard[] }, node: string): CSIDriverCapacityShard => st.shards.find((o) => o.spec!.shard === shardOf(node, SHARDS))!;
      try {
        const full = await eventually(async () => {
          const st = await driverStatus(admin, name);
          expect(poolsOf(st.storage, '<ephemeral>')).to.deep.equal(nodes);
          expect(st.head?.status).to.deep.include({ classCount: 1, poolCount: 50, totalCapacity: `${(50 * 51) / 2}Gi` });
          return st;
        }, 60_000);
        for (const o of [full.head!, ...full.shards]) expect(o.metadata!.ownerReferences, o.metadata!.name).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }]);
        for (const [i, nodeName] of nodes.entries()) {
          const shard = shardOfNode(full, nodeName);
          const pool = shard.status!.storage![0]!.pools!.find((p) => p.name === nodeName)!;
          expect(pool).to.deep.include({ nodeList: [nodeName], capacity: `${i + 1}Gi`, maximumVolumeSize: '1Gi' });
          const mine = managedFieldsOf(shard).filter((m) => m.manager === perNodeFieldManager(nodeName));
          expect(mine, nodeName).to.have.length(1);
          expect(mine[0]).to.deep.include({ operation: 'Apply', subresource: 'status' });
          // Exactly its own pool, nobody else's; and nowhere else.
          expect(nodes.filter((n) => ownsPool(mine[0]!.fieldsV1, '<ephemeral>', n))).to.deep.equal([nodeName]);
          expect(full.shards.filter((o) => managedFieldsOf(o).some((m) => m.manager === perNodeFieldManager(nodeName)))).to.have.length(1);
        }
        expect(await writes('publish', 'conflict')).to.equal(before.conflict);
        expect(await writes('publish', 'error')).to.equal(before.error);
        expect(await writes('create', 'error')).to.equal(before.createError);

        // Stop the writer of node-00, which is also the one that prunes its shard: the next one there takes over.
        stops.get('node-00')!.abort();
        await running[0];
        const after = await eventually(async () => {
          const st = await driverStatus(admin, name);
          expect(poolsOf(st.storage, '<ephemeral>')).to.deep.equal(nodes.slice(1));
          expect(managedFieldsOf(shardOfNode(st, 'node-00')).map((m) => m.manager)).to.not.include(perNodeFieldManager('node-00'));
          expect(st.head?.status).to.deep.include({ poolCount: 49, totalCapacity: `${(50 * 51) / 2 - 1}Gi` });
          return st;
        }, 90_000);
        for (const nodeName of nodes.slice(1)) expect(managedFieldsOf(shardOfNode(after, nodeName)).some((m) => m.manager === perNodeFieldManager(nodeName))).to.equal(true);
        expect(await writes('publish', 'conflict')).to.equal(before.conflict);
      } finally {
        for (const ac of stops.values()) ac.abort();
        await Promise.all(running);
      }
      await deleteDriverStatus(admin, name);
      await admin.delete(Resources.csiDrivers, name);
    });
  });
});
