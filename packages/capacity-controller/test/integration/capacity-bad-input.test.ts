import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { CSIStorageCapacity, Event, KubeClient, KubeObject, ResourceType } from '@topovol/shared';
import { accessAllowed, eventually, INSTALL_NAMESPACE, withPodEnv } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { GiB } from '@topovol/testing/csi-test-driver';
import { CSIDriverCapacities } from '../../src/status/index.js';
import type { CSIDriverCapacity } from '../../src/status/index.js';
import { capacityObjects, installedCapacityIdentity, metricValue, RunningCapacity } from './capacity-harness.js';
import { createCSIDriver } from './status-helpers.js';
import { useCapacityTestbed } from './capacity-testbed.js';

const ZONE = 'topology.kubernetes.io/zone';
const RACK = 'topology.example.com/rack';

// The bad-input corpus of docs/reliability.md, for the capacity loop: nodes, CSINodes, classes and
// driver answers a cluster can produce. Each is answered by a Warning Event (counted by
// topovol_events_total) or a failed-call metric and Ready=False, never publishes a wrong figure,
// and leaves the loop working: a good node next to the bad input keeps its object and its figure
// follows the driver (the canary).
describe('reliability: bad input to the capacity loop (real API server, CSI over gRPC)', function () {
  this.timeout(120_000);
  const tb = useCapacityTestbed('capbad-');
  let admin: KubeClient;
  let ns: string;
  let driverName: string;
  let driver: CsiTestDriver;
  beforeEach(() => ({ admin, ns, driverName, driver } = tb));
  const name = (s: string): string => tb.name(s);

  const addNode = (n: string, labels: Record<string, string>, keys: string[]): Promise<void> => tb.addNode(n, labels, keys);
  const addClass = (c: string, parameters: Record<string, string> = {}): Promise<void> => tb.addClass(c, parameters);
  const events = async (involved: string, ns = 'default'): Promise<string[]> =>
    (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=${involved}` })).items.map((e) => `${e.type}/${e.reason}: ${e.message}`);
  const counted = (reason: string): Promise<number> => metricValue('topovol_events_total', { type: 'Warning', reason });
  const figures = async (): Promise<string[]> => (await capacityObjects(admin, ns)).map((o) => `${o.storageClassName.slice(ns.length + 1)} ${JSON.stringify(o.segment)}${o.pool ? ` ${o.pool}` : ''}=${o.capacity}`);
  /** The canary: the good zone's figure follows the driver, so the loop still works. */
  async function canaryFollows(): Promise<void> {
    driver.setCapacity({ [ZONE]: 'good' }, 9n * GiB);
    await eventually(async () => expect(await figures()).to.include(`fast {"${ZONE}":"good"}=9Gi`));
  }
  /** The CSIDriverCapacity's Ready condition. */
  const readyCondition = async (): Promise<{ status?: string; reason?: string; message?: string } | undefined> =>
    (await admin.get<CSIDriverCapacity>(CSIDriverCapacities, driverName)).status?.conditions?.find((c) => c.type === 'Ready');
  const start = (): Promise<unknown> => tb.start(['--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
  /** Once the writes are allowed: the good zone's object published, Ready again, no refused write owed. */
  async function publishedAndReady(): Promise<void> {
    await eventually(async () => {
      expect(await figures()).to.deep.equal([`fast {"${ZONE}":"good"}=5Gi`]);
      const ready = await readyCondition();
      expect([ready?.status, ready?.reason]).to.deep.equal(['True', 'AllMeasured']);
      expect(await metricValue('topovol_capacity_object_writes_denied', { driver: driverName })).to.equal(0);
    }, 60_000);
  }

  it('a CSINode naming a topology key its node lacks, and a node without topology labels: a Warning on each node, no object for them', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addNode('no-rack', { [ZONE]: 'good' }, [ZONE, RACK]);
    await addNode('bare', {}, [ZONE]);
    await addClass('fast');
    const before = await counted('NodeWithoutTopology');
    await start();
    await eventually(async () => expect(await figures()).to.deep.equal([`fast {"${ZONE}":"good"}=5Gi`]));
    await eventually(async () => {
      expect((await events(name('no-rack'))).join('\n')).to.match(new RegExp(`Warning/NodeWithoutTopology: .*topology key\\(s\\) ${RACK} .*no such label`));
      expect((await events(name('bare'))).join('\n')).to.match(new RegExp(`Warning/NodeWithoutTopology: .*topology key\\(s\\) ${ZONE}`));
    });
    expect(await counted('NodeWithoutTopology')).to.be.at.least(before + 2);
    await canaryFollows();
  });

  it('a node whose CSINode lists fewer topology keys than its labels carry, next to nodes listing them (a driver rollout adding a key): a Warning on it', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    driver.setCapacity({ [ZONE]: 'good', [RACK]: 'r1' }, 1n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addNode('racked', { [ZONE]: 'good', [RACK]: 'r1' }, [ZONE, RACK]);
    // Labelled with a rack like the new nodes, but its driver lists only the zone: the zone's object
    // must exclude the racked nodes, so it cannot match this one either.
    await addNode('old-plugin', { [ZONE]: 'good', [RACK]: 'r2' }, [ZONE]);
    await addClass('fast');
    await start();
    await eventually(async () => expect((await events(name('old-plugin'))).join('\n')).to.match(new RegExp(`Warning/NodeWithoutTopology: .*label\\(s\\) ${RACK}, which its CSINode does not list`)));
    expect((await events(name('good'))).join('\n'), 'a node its segment matches gets no Warning').to.not.match(/NodeWithoutTopology/);
    // The loop goes on publishing both segments (the zone's object excludes the racked nodes).
    await eventually(async () => expect((await figures()).map((f) => f.split('=')[0])).to.have.members([`fast {"${RACK}":"r1","${ZONE}":"good"}`, `fast {"${ZONE}":"good"}`]));
  });

  it('a node labelled zone "a____b" (a valid label value) is an opaque segment value: published as it is', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    driver.setCapacity({ [ZONE]: 'a____b' }, 3n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addNode('odd', { [ZONE]: 'a____b' }, [ZONE]);
    await addClass('fast');
    await start();
    await eventually(async () => expect(await figures()).to.deep.equal([`fast {"${ZONE}":"a____b"}=3Gi`, `fast {"${ZONE}":"good"}=5Gi`]));
    await canaryFollows();
  });

  it('invalid pools parameters (not JSON, a pool name too long for its label): a Warning on the class, nothing published for it, other classes unaffected', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addClass('fast');
    await addClass('garbled', { topologyConstrainedPools: '[{"poolName": "p1", "domainSegments": [' });
    await addClass('long', { topologyConstrainedPools: JSON.stringify([{ poolName: 'p'.repeat(100), domainSegments: [{ domainLabel: 'zone', value: 'good' }] }]) });
    const before = await counted('InvalidTopologyConstrainedPools');
    await start();
    await eventually(async () => {
      expect((await events(name('garbled'))).join('\n')).to.contain('Warning/InvalidTopologyConstrainedPools: parameter topologyConstrainedPools is not JSON');
      expect((await events(name('long'))).join('\n')).to.contain('longer than 63 characters');
    });
    expect(await counted('InvalidTopologyConstrainedPools')).to.be.at.least(before + 2);
    await eventually(async () => expect(await figures()).to.deep.equal([`fast {"${ZONE}":"good"}=5Gi`]));
    await canaryFollows();
  });

  it('a driver answering a negative capacity: a failed call (metric, Ready=False), never a negative or renewed figure; zero (a missing field on the wire) is published as 0', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    driver.setCapacity({ [ZONE]: 'neg' }, 4n * GiB);
    driver.setCapacity({ [ZONE]: 'empty' }, 0n);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addNode('neg', { [ZONE]: 'neg' }, [ZONE]);
    await addNode('empty', { [ZONE]: 'empty' }, [ZONE]);
    await addClass('fast');
    await start();
    // proto3 sends no field for 0: a reply without available_capacity reads as 0, and 0 is room for nothing.
    await eventually(async () => expect(await figures()).to.deep.equal([`fast {"${ZONE}":"empty"}=0`, `fast {"${ZONE}":"good"}=5Gi`, `fast {"${ZONE}":"neg"}=4Gi`]));
    const invalid = await metricValue('topovol_capacity_getcapacity_total', { driver: driverName, result: 'InvalidResponse' });
    driver.setCapacity({ [ZONE]: 'neg' }, -5n);
    await eventually(async () => {
      expect(await metricValue('topovol_capacity_getcapacity_total', { driver: driverName, result: 'InvalidResponse' })).to.be.above(invalid);
      const ready = await readyCondition();
      expect([ready?.status, ready?.reason]).to.deep.equal(['False', 'GetCapacityFailed']);
      expect(ready?.message).to.contain('negative size');
      expect(ready?.message, 'names the class').to.contain(`StorageClass ${name('fast')}:`);
      // A failure a retry will not mend: said on the class (kubectl describe storageclass).
      expect((await events(name('fast'))).join('\n')).to.match(/Warning\/GetCapacityFailed: CSI driver .* cannot measure the capacity of storage class .*negative size/);
    });
    expect(await figures(), 'the last good figure stays, as for any failing call').to.include(`fast {"${ZONE}":"neg"}=4Gi`);
    await canaryFollows();
    driver.setCapacity({ [ZONE]: 'neg' }, 2n * GiB);
    await eventually(async () => expect(await figures()).to.include(`fast {"${ZONE}":"neg"}=2Gi`));
  });
  it('a --capacity-namespace where the loop may not write (its namespaced role not bound there): Ready=False WritesRefused with the fix, a Warning on the CSIDriver, counted errors, tried again within each poll interval however long it lasts; once bound, the objects appear', async function () {
    this.timeout(240_000);
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addClass('fast');
    await createCSIDriver(admin, driverName);
    const identity = await installedCapacityIdentity();
    try {
      const errors = await metricValue('controller_runtime_reconcile_errors_total', { controller: 'capacity' });
      const refused = await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' });
      tb.loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms'], { client: identity.client }, { bind: false });
      await eventually(async () => {
        const ready = await readyCondition();
        expect([ready?.status, ready?.reason]).to.deep.equal(['False', 'WritesRefused']);
        expect(ready?.message).to.contain(`namespace ${ns} refused`).and.contain('topovol-capacity-namespaced');
        expect((await events(driverName)).join('\n')).to.match(/Warning\/CapacityWritesRefused: CSIStorageCapacity create in namespace .* refused: .*forbidden/);
      });
      expect(await metricValue('controller_runtime_reconcile_errors_total', { controller: 'capacity' })).to.be.above(errors);
      expect(await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' })).to.be.above(refused);
      expect(await metricValue('topovol_capacity_object_writes_denied', { driver: driverName }), 'the alert reads this level').to.equal(1);
      expect(await figures(), 'nothing could be written').to.deep.equal([]);
      // Thirty more tries while denied: one about every poll interval (1 s here), as
      // external-provisioner's poll queues every item whatever its backoff. The work queue's
      // backoff alone, doubling per failure, would put the thirtieth hours away (16 came in 60 s
      // without the cap), and the objects would appear that long after the binding is made.
      const tried = await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' });
      await eventually(async () => expect(await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' })).to.be.at.least(tried + 30), 90_000);
      // The operator binds the role (docs/install.md): the loop retries, publishes, and is Ready.
      await identity.bindNamespaced(ns);
      await publishedAndReady();
    } finally {
      await tb.loop?.stop();
      tb.loop = undefined;
      await identity.cleanup();
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });

  it('a quota that admits no CSIStorageCapacity object in the namespace: Ready=False WritesRefused with the server\'s message (no role to bind), a Warning on the CSIDriver; once lifted, the objects appear', async function () {
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addClass('fast');
    await createCSIDriver(admin, driverName);
    // No quota controller runs here: the status it would write is written by hand, as it would be.
    const counted = 'count/csistoragecapacities.storage.k8s.io';
    const quotas: ResourceType = { group: '', version: 'v1', plural: 'resourcequotas', kind: 'ResourceQuota', namespaced: true };
    const quota = await admin.create<KubeObject & { status?: object }>(quotas, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'no-capacity', namespace: ns }, spec: { hard: { [counted]: '0' } } } as KubeObject);
    await admin.replaceStatus(quotas, { ...quota, status: { hard: { [counted]: '0' }, used: { [counted]: '0' } } });
    try {
      const refused = await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' });
      await start();
      await eventually(async () => {
        const ready = await readyCondition();
        expect([ready?.status, ready?.reason]).to.deep.equal(['False', 'WritesRefused']);
        expect(ready?.message).to.contain('exceeded quota').and.not.contain('topovol-capacity-namespaced');
        expect((await events(driverName)).join('\n')).to.match(/Warning\/CapacityWritesRefused: CSIStorageCapacity create in namespace .* refused: .*exceeded quota/);
      }, 60_000);
      expect(await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'create' })).to.be.above(refused);
      expect(await metricValue('topovol_capacity_object_writes_denied', { driver: driverName }), 'the alert reads this level').to.equal(1);
      await admin.delete(quotas, 'no-capacity', ns);
      await publishedAndReady();
    } finally {
      await admin.delete(quotas, 'no-capacity', ns).catch(() => undefined);
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });

  it("a role that may create and update but not delete the loop's objects, when their owner changes (an owner level turned on; a rollout's new ReplicaSet): OwnerReferencesPermissionEnforcement's refusal is Ready=False WritesRefused with the fix too; once bound, the objects take the owner", async function () {
    this.timeout(180_000);
    driver.setCapacity({ [ZONE]: 'good' }, 5n * GiB);
    await addNode('good', { [ZONE]: 'good' }, [ZONE]);
    await addClass('fast');
    await createCSIDriver(admin, driverName);
    const identity = await installedCapacityIdentity();
    const args = [`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms'];
    const owned = async (): Promise<string[]> =>
      (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items.map((o) => `${String(o.capacity)} ${(o.metadata?.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}/${r.uid}`).join()}`);
    const ready = async (): Promise<[string?, string?, string?]> => {
      const c = await readyCondition();
      return [c?.status, c?.reason, c?.message];
    };
    try {
      // The operator's own role in the objects' namespace: the writes and the owner's read, but not
      // delete, which OwnerReferencesPermissionEnforcement asks of whoever changes an object's
      // ownerReferences (plugin/pkg/admission/gc/gc_admission.go; creates are exempt).
      const role = `${identity.serviceAccount}-no-delete`;
      await admin.create(Resources.roles, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: role, namespace: ns }, rules: [
        { apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['create', 'update'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      ] } as never);
      await admin.create(Resources.roleBindings, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: role, namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role }, subjects: [{ kind: 'ServiceAccount', name: identity.serviceAccount, namespace: INSTALL_NAMESPACE }] } as never);
      await accessAllowed(admin, identity.serviceAccount, { group: 'storage.k8s.io', resource: 'csistoragecapacities', verb: 'update', namespace: ns });
      // Without owners, the role is enough.
      tb.loop = await RunningCapacity.start(args, { client: identity.client }, { bind: false });
      await eventually(async () => expect(await owned()).to.deep.equal(['5Gi ']));
      await tb.loop.stop();
      // With its pod as the owner: the update that sets it is refused.
      const pod = await admin.create<KubeObject>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'capacity-0', namespace: ns }, spec: { containers: [{ name: 'c', image: 'x' }] } } as KubeObject);
      const refused = await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'update' });
      tb.loop = await withPodEnv({ name: 'capacity-0', namespace: ns }, () => RunningCapacity.start([...args, '--capacity-ownerref-level=0'], { client: identity.client }, { bind: false }));
      await eventually(async () => {
        const [status, reason, message] = await ready();
        expect([status, reason]).to.deep.equal(['False', 'WritesRefused']);
        expect(message).to.contain("cannot set an ownerRef on a resource you can't delete").and.contain('topovol-capacity-namespaced');
        expect((await events(driverName)).join('\n')).to.match(/Warning\/CapacityWritesRefused: CSIStorageCapacity update in namespace .* refused: .*can't delete/);
      });
      expect(await metricValue('topovol_capacity_object_writes_refused_total', { driver: driverName, verb: 'update' })).to.be.above(refused);
      expect(await metricValue('topovol_capacity_object_writes_denied', { driver: driverName }), 'the alert reads this level').to.equal(1);
      expect(await owned(), 'the object is kept as it was').to.deep.equal(['5Gi ']);
      // The operator binds the role the message names: the object takes its owner.
      await identity.bindNamespaced(ns);
      await eventually(async () => {
        expect(await owned()).to.deep.equal([`5Gi Pod/capacity-0/${pod.metadata?.uid}`]);
        expect((await ready()).slice(0, 2)).to.deep.equal(['True', 'AllMeasured']);
        expect(await metricValue('topovol_capacity_object_writes_denied', { driver: driverName })).to.equal(0);
      }, 60_000);
    } finally {
      await tb.loop?.stop();
      tb.loop = undefined;
      await identity.cleanup();
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });
});
