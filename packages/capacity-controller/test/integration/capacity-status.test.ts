import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { isInvalid, metricsRegistry, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { controllerClient, eventually, installCrds, sharedControlPlane } from '@topovol/shared/testing';
import { CapacityStatusWriter, CSIDriverCapacities, OBJECT_FIELD_MANAGER, perNodeFieldManager, runPerNodeWriter, SUMMARY_FIELD_MANAGER } from '../../src/status/index.js';
import type { CapacityEntry, CSIDriverCapacity } from '../../src/status/index.js';
import { managedFieldsOf, ownsPool } from '../../src/status/managed-fields.js';

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

async function writes(operation: string, result: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric('topovol_capacity_status_writes_total');
  if (!m) return 0;
  const { values } = await m.get();
  return values.filter((v) => v.labels.operation === operation && v.labels.result === result).reduce((s, v) => s + v.value, 0);
}

const uniqueDriver = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}.csi.topovol.test`;

async function createCSIDriver(client: KubeClient, name: string): Promise<string> {
  const d = await client.create<KubeObject>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name }, spec: {} } as KubeObject);
  return d.metadata!.uid!;
}

const getCdc = (client: KubeClient, name: string): Promise<CSIDriverCapacity> => client.get<CSIDriverCapacity>(CSIDriverCapacities, name);

function poolsOf(obj: CSIDriverCapacity, cls: string): string[] {
  return (obj.status?.storage?.find((s) => s.storageClassName === cls)?.pools ?? []).map((p) => p.name).sort();
}

// Issue 5 "Outputs 2" and "Per-node mode" on the real kube-apiserver: the CSIDriverCapacity CRD from
// config/crd and the server-side-apply writers of src/status.
describe('capacity status: CSIDriverCapacity CRD and writers (real API server)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  // The writers run as the capacity loop's ServiceAccount (generated RBAC); the test reads as admin.
  let writerClient: KubeClient;

  before(async function () {
    const cp = await sharedControlPlane();
    admin = cp.adminClient();
    await installCrds(admin);
    writerClient = await controllerClient('capacity');
  });

  describe('the CRD', function () {
    it('is cluster-scoped with short name, categories, status subresource, list-map markers and printer columns', async function () {
      const crd = await admin.get<Crd>(Resources.customResourceDefinitions, 'csidrivercapacities.topovol.io');
      expect(crd.spec.scope).to.equal('Cluster');
      expect(crd.spec.names.shortNames).to.deep.equal(['cdc']);
      expect(crd.spec.names.categories).to.deep.equal(['topovol', 'storage']);
      const v = crd.spec.versions.find((x) => x.name === 'v1alpha1')!;
      expect(v.subresources?.status).to.deep.equal({});
      expect((v.additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath])).to.deep.equal([
        ['Driver', '.spec.driverName'],
        ['Classes', '.status.classCount'],
        ['Pools', '.status.poolCount'],
        ['Total', '.status.totalCapacity'],
        ['Age', '.metadata.creationTimestamp'],
      ]);
      const storage = v.schema!.openAPIV3Schema!.properties!.status!.properties!.storage!;
      expect(storage['x-kubernetes-list-type']).to.equal('map');
      expect(storage['x-kubernetes-list-map-keys']).to.deep.equal(['storageClassName']);
      const pools = storage.items!.properties!.pools!;
      expect(pools['x-kubernetes-list-type']).to.equal('map');
      expect(pools['x-kubernetes-list-map-keys']).to.deep.equal(['name']);
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
    });
  });

  describe('CapacityStatusWriter (central mode)', function () {
    const entries = (capacity: string): CapacityEntry[] => [
      { storageClassName: 'fast', pool: 'zone-a', nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': 'a' } }, capacity, maximumVolumeSize: '1Gi' },
      { storageClassName: 'fast', pool: 'zone-b', nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': 'b' } }, capacity: '3Gi' },
      { storageClassName: '<ephemeral>', pool: 'everywhere', capacity: '512Mi' },
    ];
    const ready = [{ type: 'Ready', status: 'True' as const, reason: 'CapacityKnown', message: 'all segments answered' }];

    it('creates the object owned by the CSIDriver, writes only on change, keeps condition times, fills the printer columns', async function () {
      const name = uniqueDriver('central');
      const uid = await createCSIDriver(admin, name);
      let t = Date.now();
      const writer = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 600_000, now: () => t });
      expect(await writer.publish(entries('2Gi'), ready)).to.deep.equal({ wrote: true });
      const first = await getCdc(admin, name);
      expect(first.metadata!.ownerReferences).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }]);
      expect(first.spec).to.deep.equal({ driverName: name });
      expect(first.status!.storage!.map((s) => [s.storageClassName, s.pools!.map((p) => p.name)])).to.deep.equal([
        ['<ephemeral>', ['everywhere']],
        ['fast', ['zone-a', 'zone-b']],
      ]);
      expect(first.status).to.deep.include({ classCount: 2, poolCount: 3, totalCapacity: '5Gi' });
      const cond = first.status!.conditions![0]!;

      // Nothing changed (and expiry far away): no write at all.
      t += 60_000;
      expect(await writer.publish(entries('2Gi'), ready)).to.deep.equal({ wrote: false });
      expect((await getCdc(admin, name)).metadata!.resourceVersion).to.equal(first.metadata!.resourceVersion);

      // A capacity change is written; the unchanged condition keeps its transition time.
      t += 60_000;
      expect(await writer.publish(entries('4Gi'), [{ ...ready[0]!, message: 'still fine' }])).to.deep.equal({ wrote: true });
      const second = await getCdc(admin, name);
      expect(second.status!.storage!.find((s) => s.storageClassName === 'fast')!.pools![0]!.capacity).to.equal('4Gi');
      expect(second.status!.conditions![0]).to.deep.include({ message: 'still fine', lastTransitionTime: cond.lastTransitionTime });
      expect(second.status!.totalCapacity).to.equal('7Gi');

      // Within half of expiryMs of the expiry: refreshed although unchanged.
      t += 300_001;
      expect(await writer.publish(entries('4Gi'), [{ ...ready[0]!, message: 'still fine' }])).to.deep.equal({ wrote: true });

      // What kubectl get prints (server-side Table from the printer columns).
      const table = await admin.request<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }>('GET', `/apis/topovol.io/v1alpha1/csidrivercapacities/${name}`, {
        headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      });
      expect(table.columnDefinitions.map((c) => c.name)).to.deep.equal(['Name', 'Driver', 'Classes', 'Pools', 'Total', 'Age']);
      expect(table.rows[0]!.cells.slice(0, 5)).to.deep.equal([name, name, 2, 3, '7Gi']);

      // A dropped class is released (SSA removes what the manager no longer applies).
      expect(await writer.publish(entries('4Gi').filter((e) => e.storageClassName === 'fast'), [])).to.deep.equal({ wrote: true });
      const third = await getCdc(admin, name);
      expect(third.status!.storage!.map((s) => s.storageClassName)).to.deep.equal(['fast']);
      expect(third.status!.conditions ?? []).to.deep.equal([]);
      expect(third.status).to.deep.include({ classCount: 1, poolCount: 2 });
      await admin.delete(CSIDriverCapacities, name);
      await admin.delete(Resources.csiDrivers, name);
    });

    it('an object deleted by hand is recreated; a CSIDriver appearing later becomes the owner', async function () {
      const name = uniqueDriver('late');
      let t = Date.now();
      const writer = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 60_000, now: () => t });
      await writer.publish(entries('1Gi'), []);
      expect((await getCdc(admin, name)).metadata!.ownerReferences ?? []).to.deep.equal([]);

      await admin.delete(CSIDriverCapacities, name);
      expect(await writer.publish(entries('1Gi'), [])).to.deep.equal({ wrote: true });
      expect(poolsOf(await getCdc(admin, name), 'fast')).to.deep.equal(['zone-a', 'zone-b']);

      const uid = await createCSIDriver(admin, name);
      t += 60_000; // the CSIDriver lookup happens at most once per expiry period
      await writer.publish(entries('1Gi'), []);
      const obj = await getCdc(admin, name);
      expect(obj.metadata!.ownerReferences).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }]);
      expect(managedFieldsOf(obj).map((m) => m.manager)).to.include.members([OBJECT_FIELD_MANAGER, 'topovol-capacity', SUMMARY_FIELD_MANAGER]);
      await admin.delete(CSIDriverCapacities, name);
      await admin.delete(Resources.csiDrivers, name);
    });
  });

  describe('pruning other writers\' entries', function () {
    it('an owner refreshing between the pruner\'s read and write wins (resourceVersion precondition); afterwards the entry and its manager go', async function () {
      const name = uniqueDriver('race');
      const t0 = Date.now();
      let tw = t0;
      const node = { storageClassName: '<ephemeral>', pool: 'n1', nodeList: ['n1'], capacity: '1Gi' };
      const owner = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: perNodeFieldManager('n1'), expiryMs: 10_000, now: () => tw, summarizeOnPublish: false });
      const other = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: perNodeFieldManager('n2'), expiryMs: 10_000, now: () => t0 + 100_000, summarizeOnPublish: false });
      await owner.publish([node], []);
      await other.publish([{ ...node, pool: 'n2', nodeList: ['n2'] }], []);

      // The pruner's clock says n1 expired; right after its read, n1's writer refreshes.
      let hooked = false;
      const racing = new Proxy(writerClient, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (prop !== 'get' || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          return async (...args: Parameters<KubeClient['get']>) => {
            const got = await target.get(...args);
            if (!hooked && args[0] === CSIDriverCapacities) {
              hooked = true;
              tw = t0 + 30_000;
              expect(await owner.publish([node], [])).to.deep.equal({ wrote: true });
            }
            return got;
          };
        },
      });
      let tp = t0 + 20_000;
      const pruner = new CapacityStatusWriter(racing, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 10_000, now: () => tp });
      const conflictsBefore = await writes('prune', 'conflict');
      expect(await pruner.pruneExpired()).to.equal(0);
      expect(hooked).to.equal(true);
      expect(await writes('prune', 'conflict')).to.be.greaterThan(conflictsBefore);
      let obj = await getCdc(admin, name);
      expect(poolsOf(obj, '<ephemeral>')).to.deep.equal(['n1', 'n2']);

      // Now really stale: pruned, and n1's manager no longer listed; n2 untouched.
      tp = t0 + 50_000;
      expect(await pruner.pruneExpired()).to.equal(1);
      obj = await getCdc(admin, name);
      expect(poolsOf(obj, '<ephemeral>')).to.deep.equal(['n2']);
      const managers = managedFieldsOf(obj).map((m) => m.manager);
      expect(managers).to.not.include(perNodeFieldManager('n1'));
      expect(managers).to.include(perNodeFieldManager('n2'));
      expect(obj.status).to.deep.include({ poolCount: 1, classCount: 1 });
      await admin.delete(CSIDriverCapacities, name);
    });

    it('an expired pool written by a plain update (no applier) is removed by JSON patch', async function () {
      const name = uniqueDriver('update');
      await admin.create(CSIDriverCapacities, { apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacity', metadata: { name }, spec: { driverName: name } });
      const expired = new Date(Date.now() - 60_000).toISOString();
      const fresh = new Date(Date.now() + 600_000).toISOString();
      await admin.patch(CSIDriverCapacities, name, undefined, 'merge', { status: { storage: [{ storageClassName: 'fast', pools: [{ name: 'old', capacity: '1Gi', expiryTime: expired }, { name: 'new', capacity: '1Gi', expiryTime: fresh }] }] } }, { subresource: 'status', fieldManager: 'kubectl-edit' });
      const pruner = new CapacityStatusWriter(writerClient, { driverName: name, fieldManager: 'topovol-capacity', expiryMs: 60_000 });
      expect(await pruner.pruneExpired()).to.equal(1);
      expect(poolsOf(await getCdc(admin, name), 'fast')).to.deep.equal(['new']);
      await admin.delete(CSIDriverCapacities, name);
    });
  });

  describe('per-node mode (acceptance 4)', function () {
    it('50 concurrent writers: no conflicts, one pool per node under its own field manager; a stopped writer\'s pool expires and is pruned', async function () {
      this.timeout(200_000);
      const name = uniqueDriver('nodes');
      const uid = await createCSIDriver(admin, name);
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
          capacity: () => Promise.resolve({ capacity: `${i + 1}Gi`, maximumVolumeSize: '1Gi' }),
          signal: ac.signal,
        });
      });
      try {
        const full = await eventually(async () => {
          const obj = await getCdc(admin, name);
          expect(poolsOf(obj, '<ephemeral>')).to.deep.equal(nodes);
          expect(obj.status).to.deep.include({ classCount: 1, poolCount: 50, totalCapacity: `${(50 * 51) / 2}Gi` });
          return obj;
        }, 60_000);
        expect(full.metadata!.ownerReferences).to.deep.equal([{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name, uid }]);
        for (const [i, nodeName] of nodes.entries()) {
          const pool = full.status!.storage![0]!.pools!.find((p) => p.name === nodeName)!;
          expect(pool).to.deep.include({ nodeList: [nodeName], capacity: `${i + 1}Gi`, maximumVolumeSize: '1Gi' });
          const mine = managedFieldsOf(full).filter((m) => m.manager === perNodeFieldManager(nodeName));
          expect(mine, nodeName).to.have.length(1);
          expect(mine[0]).to.deep.include({ operation: 'Apply', subresource: 'status' });
          // Exactly its own pool, nobody else's.
          expect(nodes.filter((n) => ownsPool(mine[0]!.fieldsV1, '<ephemeral>', n))).to.deep.equal([nodeName]);
        }
        expect(await writes('publish', 'conflict')).to.equal(before.conflict);
        expect(await writes('publish', 'error')).to.equal(before.error);
        expect(await writes('create', 'error')).to.equal(before.createError);

        // Stop the writer of node-00, which is also the one that prunes: node-01 takes over.
        stops.get('node-00')!.abort();
        await running[0];
        const after = await eventually(async () => {
          const obj = await getCdc(admin, name);
          expect(poolsOf(obj, '<ephemeral>')).to.deep.equal(nodes.slice(1));
          expect(managedFieldsOf(obj).map((m) => m.manager)).to.not.include(perNodeFieldManager('node-00'));
          expect(obj.status).to.deep.include({ poolCount: 49, totalCapacity: `${(50 * 51) / 2 - 1}Gi` });
          return obj;
        }, 90_000);
        for (const nodeName of nodes.slice(1)) expect(managedFieldsOf(after).some((m) => m.manager === perNodeFieldManager(nodeName))).to.equal(true);
        expect(await writes('publish', 'conflict')).to.equal(before.conflict);
      } finally {
        for (const ac of stops.values()) ac.abort();
        await Promise.all(running);
      }
      await admin.delete(CSIDriverCapacities, name);
      await admin.delete(Resources.csiDrivers, name);
    });
  });
});
