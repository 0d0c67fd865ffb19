import { expect } from 'chai';
import { logger, metricsRegistry, Resources, retryOnConflict } from '@topovol/shared';
import type { CSIDriver, CSIStorageCapacity, Event, KubeClient, KubeObject, Node, PersistentVolume, StorageClass } from '@topovol/shared';
import { controllerClient, eventually, withPodEnv } from '@topovol/testing';
import { resolveOwner } from '../../src/objects/resolve-owner.js';
import { CSIDriverCapacities } from '../../src/status/index.js';
import type { CSIDriverCapacity } from '../../src/status/index.js';
import { driverStatus } from './status-helpers.js';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { GiB } from '@topovol/testing/csi-test-driver';
import { bindCapacityRules, capacityObjects, createNode, deleteVolume, metricValue, registerDriverOnNode, RunningCapacity, startDriver } from './capacity-harness.js';
import { useCapacityTestbed } from './capacity-testbed.js';

const ZONE = 'topology.kubernetes.io/zone';

function storageClass(name: string, driver: string, parameters: Record<string, string> = {}): StorageClass {
  return { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: driver, volumeBindingMode: 'WaitForFirstConsumer', parameters };
}

function volume(name: string, driver: string, cls: string, zone: string | undefined, label: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { 'capacity-test': label } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: cls,
      persistentVolumeReclaimPolicy: 'Delete',
      csi: { driver, volumeHandle: name },
      ...(zone ? { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: [zone] }] }] } } } : {}),
    },
  };
}

// external-provisioner pkg/capacity behaviour on the real API server, with the project's CSI test
// driver over a real unix socket as the capacity source.
describe('capacity: CSIStorageCapacity objects follow the driver (real API server, CSI over gRPC)', function () {
  this.timeout(180_000);
  const tb = useCapacityTestbed('cap-');
  let admin: KubeClient;
  let ns: string;
  let driverName: string;
  let driver: CsiTestDriver;
  beforeEach(() => ({ admin, ns, driverName, driver } = tb));
  const name = (s: string): string => tb.name(s);

  async function addNode(n: string, zone: string): Promise<void> {
    await createNode(admin, name(n), { [ZONE]: zone });
    await registerDriverOnNode(admin, name(n), driverName, [ZONE]);
    tb.track('node', name(n));
    tb.track('csinode', name(n));
  }
  async function addClass(c: string, parameters: Record<string, string> = {}): Promise<void> {
    await admin.create(Resources.storageClasses, storageClass(name(c), driverName, parameters));
    tb.track('class', name(c));
  }
  const start = async (extra: string[] = []): Promise<void> => {
    await tb.start(['--capacity-poll-interval=10m', '--capacity-min-refresh-interval=300ms', ...extra]);
  };

  it('creates one object per class and segment, then follows nodes, labels, classes, volumes and a hand deletion, writing only on change', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 10n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 20n * GiB, { maximumVolumeSize: 5n * GiB });
    await addNode('n1', 'z1');
    await addNode('n2', 'z2');
    await addClass('fast');
    await start();
    const fast = name('fast');
    await eventually(async () =>
      expect(await capacityObjects(admin, ns)).to.deep.equal([
        { storageClassName: fast, segment: { [ZONE]: 'z1' }, capacity: '10Gi' },
        { storageClassName: fast, segment: { [ZONE]: 'z2' }, capacity: '20Gi', maximumVolumeSize: '5Gi' },
      ]),
    );
    const objs = (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
    expect(objs[0]!.metadata?.labels).to.deep.equal({ 'csi.storage.k8s.io/drivername': driverName, 'csi.storage.k8s.io/managed-by': 'topovol-capacity' });
    expect(objs[0]!.metadata?.name).to.match(/^csisc-/);
    await eventually(async () => {
      expect(await metricValue('csistoragecapacities_desired_goal')).to.equal(2);
      expect(await metricValue('csistoragecapacities_desired_current')).to.equal(2);
      expect(await metricValue('csistoragecapacities_obsolete')).to.equal(0);
    });

    // Nothing changed at the driver: a volume event makes the loop ask again, and it writes nothing.
    // Judged by this namespace's objects (their resourceVersions), not the process-wide write metric,
    // which another suite's loop in this process could move (one write too many in a full run).
    // That planItem sends no update without a change is unit-tested (desired-and-plan.test.ts).
    const versions = async (): Promise<Record<string, string>> =>
      Object.fromEntries((await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items.map((o) => [o.metadata!.name!, o.metadata!.resourceVersion!]));
    const before = await versions();
    const calls = driver.calls('GetCapacity');
    await admin.create(Resources.persistentVolumes, volume(name('idle'), driverName, fast, 'z1', ns));
    tb.track('pv', name('idle'));
    await eventually(() => expect(driver.calls('GetCapacity')).to.be.greaterThan(calls));
    await retryOnConflict(async () => {
      const c = await admin.get<StorageClass>(Resources.storageClasses, fast);
      c.metadata = { ...c.metadata, annotations: { touched: 'yes' } };
      await admin.replace(Resources.storageClasses, c);
    });
    await addNode('n1b', 'z1'); // same segment: the set of segments is unchanged

    // A node in a new zone; a relabelled node; a removed node.
    driver.setCapacity({ [ZONE]: 'z3' }, 30n * GiB);
    driver.setCapacity({ [ZONE]: 'z4' }, 40n * GiB);
    await addNode('n3', 'z3');
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.include({ storageClassName: fast, segment: { [ZONE]: 'z3' }, capacity: '30Gi' }));
    // The no-op triggers above were handled before this change (one queue): exactly one write, the create.
    const after = await versions();
    expect(Object.keys(after), 'one object more, the created one').to.have.length(Object.keys(before).length + 1);
    for (const [n, rv] of Object.entries(before)) expect(after[n], `no API write of ${n} while nothing changed`).to.equal(rv);
    await retryOnConflict(async () => {
      const n = await admin.get<Node>(Resources.nodes, name('n3'));
      n.metadata = { ...n.metadata, labels: { [ZONE]: 'z4' } };
      await admin.replace(Resources.nodes, n);
    });
    await admin.delete(Resources.nodes, name('n2'));
    await eventually(async () =>
      expect(await capacityObjects(admin, ns)).to.deep.equal([
        { storageClassName: fast, segment: { [ZONE]: 'z1' }, capacity: '10Gi' },
        { storageClassName: fast, segment: { [ZONE]: 'z4' }, capacity: '40Gi' },
      ]),
    );

    // A class added, a class deleted.
    await addClass('slow');
    await admin.delete(Resources.storageClasses, fast);
    const slow = name('slow');
    await eventually(async () =>
      expect(await capacityObjects(admin, ns)).to.deep.equal([
        { storageClassName: slow, segment: { [ZONE]: 'z1' }, capacity: '10Gi' },
        { storageClassName: slow, segment: { [ZONE]: 'z4' }, capacity: '40Gi' },
      ]),
    );

    // Volumes: the poll interval is 10m, so only the PV events can explain a refresh, and only z1's.
    const z4calls = driver.getCapacityRequests().filter((r) => r.accessibleTopology?.[ZONE] === 'z4').length;
    driver.setCapacity({ [ZONE]: 'z1' }, 7n * GiB);
    driver.setCapacity({ [ZONE]: 'z4' }, 1n * GiB); // not refreshed: no volume event there
    await admin.create(Resources.persistentVolumes, volume(name('v1'), driverName, slow, 'z1', ns));
    tb.track('pv', name('v1'));
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.include({ storageClassName: slow, segment: { [ZONE]: 'z1' }, capacity: '7Gi' }));
    driver.setCapacity({ [ZONE]: 'z1' }, 10n * GiB);
    await deleteVolume(admin, name('v1'));
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.include({ storageClassName: slow, segment: { [ZONE]: 'z1' }, capacity: '10Gi' }));
    expect(driver.getCapacityRequests().filter((r) => r.accessibleTopology?.[ZONE] === 'z4').length, 'z4 was not asked again').to.equal(z4calls);
    expect(await capacityObjects(admin, ns)).to.deep.include({ storageClassName: slow, segment: { [ZONE]: 'z4' }, capacity: '40Gi' });

    // Deleted by hand: re-created from what the loop knows, without asking the driver.
    const all = (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
    const victim = all.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === 'z1')!;
    await admin.delete(Resources.csiStorageCapacities, victim.metadata!.name!, ns);
    await eventually(async () => {
      const again = (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === 'z1');
      expect(again?.metadata?.uid).to.be.a('string').and.not.equal(victim.metadata?.uid);
      expect(again?.capacity).to.equal('10Gi');
    });

    // The capacity gauge per class and segment, for dashboards; series of the deleted class are gone.
    expect(await metricValue('topovol_capacity_available_bytes', { driver: driverName, storage_class: slow, segment: `${ZONE}=z4` })).to.equal(40 * 2 ** 30);
    const text = await metricsRegistry.metrics();
    expect(text).to.not.contain(`storage_class="${fast}"`);

    // The aggregated status says the same, with conditions.
    await eventually(async () => {
      const { head, storage } = await driverStatus(admin, driverName);
      expect(storage.map((s) => [s.storageClassName, (s.pools ?? []).map((p) => [p.name, p.nodeTopology?.matchLabels, p.capacity])])).to.deep.equal([
        [slow, [[`${ZONE}=z1`, { [ZONE]: 'z1' }, '10Gi'], [`${ZONE}=z4`, { [ZONE]: 'z4' }, '40Gi']]],
      ]);
      expect(head?.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'True' });
      expect(head?.status?.totalCapacity).to.equal('50Gi');
    });
  });

  it('a burst of 1,000 volume events costs a bounded number of GetCapacity calls, and only for the affected item', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 100n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 100n * GiB);
    await addNode('n1', 'z1');
    await addNode('n2', 'z2');
    await addClass('burst');
    const minRefreshMs = 1_000;
    tb.loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=10m', `--capacity-min-refresh-interval=${minRefreshMs}ms`]);
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.have.length(2));
    const callsOf = (zone: string): number => driver.getCapacityRequests().filter((r) => r.accessibleTopology?.[ZONE] === zone).length;
    const z1 = callsOf('z1');
    const z2 = callsOf('z2');
    const began = Date.now();
    const label = `${ns}-burst`;
    const names = Array.from({ length: 1000 }, (_, i) => name(`b${i}`));
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((n) => admin.create(Resources.persistentVolumes, volume(n, driverName, name('burst'), 'z1', label))));
    }
    driver.setCapacity({ [ZONE]: 'z1' }, 50n * GiB);
    await admin.create(Resources.persistentVolumes, volume(name('last'), driverName, name('burst'), 'z1', label));
    names.push(name('last'));
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.include({ storageClassName: name('burst'), segment: { [ZONE]: 'z1' }, capacity: '50Gi' }), 60_000);
    const elapsed = Date.now() - began;
    const made = callsOf('z1') - z1;
    // At most one call per min-refresh interval while events keep coming, plus the trailing one.
    const bound = Math.ceil(elapsed / minRefreshMs) + 2;
    expect(made, `GetCapacity calls for z1 over ${elapsed} ms`).to.be.at.most(bound).and.at.least(1);
    expect(made).to.be.lessThan(100);
    expect(callsOf('z2') - z2, 'z2 was not affected').to.equal(0);
    for (let i = 0; i < names.length; i += 100) await Promise.all(names.slice(i, i + 100).map((n) => deleteVolume(admin, n)));
  });

  it('a driver without GetCapacity: no objects, one Warning on the CSIDriver, no polling storm', async function () {
    const { driver: bare, cleanup: stopBare } = await startDriver({ name: driverName, controllerCapabilities: ['CREATE_DELETE_VOLUME'] });
    await admin.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: driverName }, spec: { storageCapacity: true } });
    try {
      await addNode('n1', 'z1');
      await addClass('fast');
      tb.loop = await RunningCapacity.start([`--csi-address=${bare.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=10m', '--capacity-min-refresh-interval=100ms']);
      await eventually(() => expect(bare.calls('GetCapacity')).to.equal(1));
      // The goal gauge is the process's, and an earlier test's loop may have left it at 2: this
      // loop's own figure for one segment first, so that the 2 below is this loop's for two.
      await eventually(async () => expect(await metricValue('csistoragecapacities_desired_goal')).to.equal(1));
      await addNode('n2', 'z2');
      await eventually(async () => expect(await metricValue('csistoragecapacities_desired_goal')).to.equal(2));
      expect(bare.calls('GetCapacity'), 'not asked again once Unimplemented').to.equal(1);
      expect(await capacityObjects(admin, ns)).to.deep.equal([]);
      await eventually(async () => {
        const evs = (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${driverName},reason=GetCapacityUnimplemented` })).items;
        expect(evs.map((e) => e.type)).to.deep.equal(['Warning']);
      });
    } finally {
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
      await tb.loop?.stop();
      tb.loop = undefined;
      await stopBare();
    }
  });

  it('Unimplemented does not stop tracking until a restart: asked again after --capacity-unimplemented-retry, then published', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 6n * GiB);
    // 12 = UNIMPLEMENTED: the driver before an in-place upgrade that adds GetCapacity.
    driver.injectFailure('GetCapacity', { code: 12, message: 'GetCapacity is not implemented', times: 2 });
    await addNode('n1', 'z1');
    await addClass('later');
    const calls = driver.calls('GetCapacity');
    await start(['--capacity-unimplemented-retry=1s']);
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: name('later'), segment: { [ZONE]: 'z1' }, capacity: '6Gi' }]), 60_000);
    // Unimplemented twice (1 s, then 2 s of backoff), then an answer: three calls, not a storm.
    expect(driver.calls('GetCapacity') - calls).to.equal(3);
  });

  it('retries a driver that is briefly unavailable, then publishes', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 3n * GiB);
    driver.injectFailure('GetCapacity', { code: 14, message: 'restarting', times: 2 });
    await addNode('n1', 'z1');
    await addClass('fast');
    await start();
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: name('fast'), segment: { [ZONE]: 'z1' }, capacity: '3Gi' }]));
    expect(await metricValue('topovol_capacity_getcapacity_total', { driver: driverName, result: 'UNAVAILABLE' })).to.equal(2);
  });

  it('pools constrained to domains (Ceph-CSI topology-constrained pools): capacity per pool in its domain, and NoPoolForDomain for a domain no pool serves', async function () {
    const region = `${ns}.test/region`;
    const zone = `${ns}.test/zone`;
    const rack = `${ns}.test/rack`;
    const place = async (n: string, labels: Record<string, string>): Promise<void> => {
      await createNode(admin, name(n), labels);
      // Registered (no topology keys: the domains come from labels); unregistered nodes do not count.
      await registerDriverOnNode(admin, name(n), driverName, []);
      tb.track('node', name(n));
    tb.track('csinode', name(n));
    };
    await place('e1', { [region]: 'east', [zone]: 'z1', [rack]: 'r1' });
    await place('e2', { [region]: 'east', [zone]: 'z2', [rack]: 'r5' });
    await place('w1', { [region]: 'west', [zone]: 'z9', [rack]: 'r1' });
    driver.setCapacity({ [region]: 'east' }, 50n * GiB, { pool: 'east-pool' });
    driver.setCapacity({ [region]: 'west', [zone]: 'z9' }, 9n * GiB, { pool: 'west-z9' });
    // Each domainLabel as Ceph-CSI's classes write it: the name after the label key's prefix.
    const pools = (list: [string, Record<string, string>][]): Record<string, string> => ({
      clusterID: 'c1',
      topologyConstrainedPools: JSON.stringify(list.map(([poolName, d]) => ({ poolName, domainSegments: Object.entries(d).map(([key, value]) => ({ domainLabel: key.slice(key.indexOf('/') + 1), value })) }))),
    });
    await addClass('ceph', pools([['east-pool', { [region]: 'east' }]]));
    await start(['--capacity-topology=domains', `--domain-labels=${region};${zone};${rack}`]);
    const cls = name('ceph');
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: cls, segment: { [region]: 'east' }, pool: 'east-pool', capacity: '50Gi' }]));
    const asked = driver.getCapacityRequests().find((r) => r.parameters?.pool === 'east-pool');
    expect(asked?.parameters, 'the pool list is not passed on, the pool name is').to.deep.equal({ clusterID: 'c1', pool: 'east-pool' });
    expect(asked?.accessibleTopology).to.deep.equal({ [region]: 'east' });
    const warnings = async (): Promise<Event[]> => (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${cls},reason=NoPoolForDomain` })).items;
    await eventually(async () => {
      const [w] = await warnings();
      expect(w?.type).to.equal('Warning');
      expect(w?.message).to.contain(`${zone}=z9`).and.not.contain(`${zone}=z1`);
    });
    const poolsCondition = async (): Promise<string | undefined> => (await admin.get<CSIDriverCapacity>(CSIDriverCapacities, driverName).catch(() => undefined))?.status?.conditions?.find((c) => c.type === 'PoolsCoverDomains')?.status;
    await eventually(async () => expect(await poolsCondition()).to.equal('False'));
    // The problem goes away (w1 moves east) and comes back: the same Warning again, aggregated into
    // the one Event (count 2, kubectl describe's "x2").
    const moveW1 = (labels: Record<string, string>) => admin.patch(Resources.nodes, name('w1'), undefined, 'merge', { metadata: { labels } });
    await moveW1({ [region]: 'east', [zone]: 'z1' });
    await eventually(async () => expect(await poolsCondition()).to.equal('True'));
    await moveW1({ [region]: 'west', [zone]: 'z9' });
    await eventually(async () => {
      const ws = await warnings();
      expect(ws).to.have.length(1);
      expect(ws[0]?.count).to.equal(2);
    });

    // The administrator adds a pool for the west zone (parameters are immutable: a new class).
    await admin.delete(Resources.storageClasses, cls);
    await admin.create(Resources.storageClasses, storageClass(cls, driverName, pools([['east-pool', { [region]: 'east' }], ['west-z9', { [region]: 'west', [zone]: 'z9' }]])));
    await eventually(async () =>
      expect(await capacityObjects(admin, ns)).to.deep.equal([
        { storageClassName: cls, segment: { [region]: 'east' }, pool: 'east-pool', capacity: '50Gi' },
        { storageClassName: cls, segment: { [region]: 'west', [zone]: 'z9' }, pool: 'west-z9', capacity: '9Gi' },
      ]),
    );
    expect(await warnings()).to.have.length(1);
    await eventually(async () => expect(await poolsCondition()).to.equal('True'));
  });

  it('per-node mode: owns one <ephemeral> pool for its node under its own field manager', async function () {
    driver.setCapacity({}, 12n * GiB);
    tb.loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, '--capacity-node-name=worker-7', '--capacity-poll-interval=2s', '--capacity-status-expiry=1m']);
    await eventually(async () => {
      const { shards, storage } = await driverStatus(admin, driverName);
      const eph = storage.find((s) => s.storageClassName === '<ephemeral>');
      expect(eph?.pools?.map((p) => [p.name, p.nodeList, p.capacity])).to.deep.equal([['worker-7', ['worker-7'], '12Gi']]);
      // In the one shard its name hashes to, under its own field manager.
      expect(shards.filter((o) => o.metadata?.managedFields?.some((m) => m.manager === 'topovol-capacity/worker-7' && m.subresource === 'status'))).to.have.length(1);
    });
    const req = driver.getCapacityRequests().at(-1);
    expect(req?.parameters ?? {}, 'an empty GetCapacity request (capacity for inline ephemeral volumes)').to.deep.equal({});
    expect(req?.accessibleTopology).to.equal(undefined);
  });

  it('an owner level without $POD_NAME is a start-up error (as external-provisioner), not objects without owners', async function () {
    driver.setCapacity({ [ZONE]: 'z1' }, 2n * GiB);
    await addNode('n1', 'z1');
    await addClass('unowned');
    const saved = process.env.POD_NAME;
    delete process.env.POD_NAME;
    try {
      let err: unknown;
      try {
        tb.loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-ownerref-level=0']);
      } catch (e) {
        err = e;
      }
      expect(String(err)).to.match(/--capacity-ownerref-level=0 needs \$POD_NAME/);
    } finally {
      if (saved !== undefined) process.env.POD_NAME = saved;
    }
    expect((await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items).to.deep.equal([]);
  });

  it('--capacity-ownerref-level=1: objects are owned by the ReplicaSet of our pod ($POD_NAME), as external-provisioner does', async function () {
    const rs = await admin.create<KubeObject>({ group: 'apps', version: 'v1', plural: 'replicasets', kind: 'ReplicaSet', namespaced: true }, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'capacity', namespace: ns },
      spec: { replicas: 0, selector: { matchLabels: { app: 'capacity' } }, template: { metadata: { labels: { app: 'capacity' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
    } as KubeObject);
    await admin.create<KubeObject>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'capacity-abcde', namespace: ns, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'capacity', uid: rs.metadata!.uid!, controller: true }] },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    } as KubeObject);
    driver.setCapacity({ [ZONE]: 'z1' }, 2n * GiB);
    await addNode('n1', 'z1');
    await addClass('owned');
    await withPodEnv({ name: 'capacity-abcde', namespace: ns }, () => start(['--capacity-ownerref-level=1']));
    await eventually(async () => {
      const [o] = (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
      expect(o?.metadata?.ownerReferences).to.deep.equal([{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'capacity', uid: rs.metadata!.uid, controller: true }]);
    });
  });

  // The other owners a capacity pod can have (a StatefulSet or DaemonSet of the driver), resolved
  // as the loop's ServiceAccount: each kind's get is in the generated ClusterRole because of this.
  for (const kind of ['StatefulSet', 'DaemonSet'] as const) {
    it(`--capacity-ownerref-level=1 resolves a pod owned by a ${kind} (as the loop's ServiceAccount)`, async function () {
      const plural = `${kind.toLowerCase()}s`;
      const template = { metadata: { labels: { app: 'capacity' } }, spec: { containers: [{ name: 'c', image: 'x' }] } };
      const owner = await admin.create<KubeObject>({ group: 'apps', version: 'v1', plural, kind, namespaced: true }, {
        apiVersion: 'apps/v1',
        kind,
        metadata: { name: 'capacity', namespace: ns },
        spec: { selector: { matchLabels: { app: 'capacity' } }, template, ...(kind === 'StatefulSet' ? { serviceName: 'capacity', replicas: 0 } : {}) },
      } as KubeObject);
      await admin.create<KubeObject>(Resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'capacity-0', namespace: ns, ownerReferences: [{ apiVersion: 'apps/v1', kind, name: 'capacity', uid: owner.metadata!.uid!, controller: true }] },
        spec: template.spec,
      } as KubeObject);
      await bindCapacityRules(ns);
      const ref = await withPodEnv({ name: 'capacity-0', namespace: ns }, async () => resolveOwner(await controllerClient('capacity'), 1, ns, logger()));
      expect(ref).to.deep.equal({ apiVersion: 'apps/v1', kind, name: 'capacity', uid: owner.metadata!.uid, controller: true });
    });
  }

  it('a malformed pools parameter gets a Warning Event on the class and no crash; fixing it publishes', async function () {
    await addNode('n1', 'z1');
    driver.setCapacity({ [ZONE]: 'z1' }, 8n * GiB, { pool: 'p1' });
    await addClass('pools', { topologyConstrainedPools: '[{"poolName": "p1", "domainSegments": [' });
    await start();
    const cls = name('pools');
    await eventually(async () => {
      const evs = (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${cls}` })).items;
      expect(evs.map((e) => `${e.type}/${e.reason}`)).to.include('Warning/InvalidTopologyConstrainedPools');
    });
    await retryOnConflict(async () => {
      const c = await admin.get<StorageClass>(Resources.storageClasses, cls);
      // Parameters are immutable: replace the class, as an administrator would.
      await admin.delete(Resources.storageClasses, cls, undefined, { preconditions: { uid: c.metadata?.uid } });
    });
    await admin.create(Resources.storageClasses, storageClass(cls, driverName, { topologyConstrainedPools: JSON.stringify([{ poolName: 'p1', domainSegments: [{ domainLabel: 'zone', value: 'z1' }] }]) }));
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.deep.equal([{ storageClassName: cls, segment: { [ZONE]: 'z1' }, pool: 'p1', capacity: '8Gi' }]));
  });
});
