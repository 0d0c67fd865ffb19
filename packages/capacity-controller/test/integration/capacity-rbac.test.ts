import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { projectClaim, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, Event, KubeClient, KubeObject, PersistentVolumeClaim } from '@topovol/shared';
import { createTestNamespace, describeRuleNecessity, installCrds, pollUntil, sharedControlPlane, withPodEnv } from '@topovol/testing';
import type { NecessityScenario } from '@topovol/testing';
import { GiB } from '@topovol/testing/csi-test-driver';
import { capacityDescriptor } from '../../src/capacity-descriptor.js';
import { CSIDriverCapacities } from '../../src/status/index.js';
import type { CSIDriverCapacity } from '../../src/status/index.js';
import { createNode, registerDriverOnNode, RunningCapacity, startDriver } from './capacity-harness.js';
import { deleteDriverStatus, driverStatus, poolsOf } from './status-helpers.js';

const ZONE = 'topology.kubernetes.io/zone';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
type OwnerKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

/** The pod the loop runs in ($POD_NAME) and its owners, as the workload controllers would make them. */
async function ownerChain(admin: KubeClient, ns: string, kind: OwnerKind): Promise<{ pod: string; level: number; owner: { kind: string; name: string } }> {
  const apps = (k: string): { group: string; version: string; plural: string; kind: string; namespaced: boolean } => ({ group: 'apps', version: 'v1', plural: `${k.toLowerCase()}s`, kind: k, namespaced: true });
  const template = { metadata: { labels: { app: 'capacity' } }, spec: { containers: [{ name: 'c', image: 'x' }] } };
  const spec = { selector: { matchLabels: { app: 'capacity' } }, template, ...(kind === 'DaemonSet' ? {} : { replicas: 0 }), ...(kind === 'StatefulSet' ? { serviceName: 'capacity' } : {}) };
  const top = await admin.create<KubeObject>(apps(kind), { apiVersion: 'apps/v1', kind, metadata: { name: 'capacity', namespace: ns }, spec } as KubeObject);
  const ref = (o: KubeObject) => [{ apiVersion: 'apps/v1', kind: o.kind!, name: o.metadata!.name!, uid: o.metadata!.uid!, controller: true }];
  let parent = top;
  if (kind === 'Deployment') {
    parent = await admin.create<KubeObject>(apps('ReplicaSet'), { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'capacity-5d8f7', namespace: ns, ownerReferences: ref(top) }, spec: { ...spec, replicas: 0 } } as KubeObject);
  }
  await admin.create<KubeObject>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'capacity-0', namespace: ns, ownerReferences: ref(parent) }, spec: template.spec } as KubeObject);
  return { pod: 'capacity-0', level: kind === 'Deployment' ? 2 : 1, owner: { kind, name: 'capacity' } };
}

/**
 * The capacity loop's ClusterRole exercised in one scenario: objects owned through
 * --capacity-ownerref-level (pod and owner gets), created, updated when a new volume shows the
 * driver has more, deleted with their class; the CSIDriverCapacity head and a shard listed, created, their status
 * applied, and their owner set by a patch when the CSIDriver appears; refreshed after a failed provisioning (claim and
 * ProvisioningFailed Event watches); a NoPoolForDomain Warning repeated when a node without a pool
 * comes back (event patch). Informers cover nodes, volumes, claims, Events, classes, CSINodes and the objects.
 */
function capacityScenario(ownerKind: OwnerKind): NecessityScenario {
  return async (client, admin) => {
    await installCrds(admin);
    const ns = await createTestNamespace(admin, 'rbac-cap-');
    const driverName = `${ns}-${randomBytes(2).toString('hex')}.csi.topovol.test`;
    const { driver, cleanup } = await startDriver({ name: driverName });
    driver.setCapacity({ [ZONE]: 'z1' }, 2n * GiB, { pool: 'p1' });
    const node = (n: string): string => `${ns}-${n}`;
    const addNode = async (n: string, zone: string): Promise<void> => {
      await createNode(admin, node(n), { [ZONE]: zone });
      await registerDriverOnNode(admin, node(n), driverName, [ZONE]);
    };
    const removeNode = async (n: string): Promise<void> => {
      await admin.delete(Resources.csiNodes, node(n)).catch(() => undefined);
      await admin.delete(Resources.nodes, node(n)).catch(() => undefined);
    };
    await addNode('n1', 'z1');
    const cls = `${ns}-pools`;
    const pools = JSON.stringify([{ poolName: 'p1', domainSegments: [{ domainLabel: 'zone', value: 'z1' }] }]);
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: driverName, volumeBindingMode: 'WaitForFirstConsumer', parameters: { topologyConstrainedPools: pools } } as never);
    const chain = await ownerChain(admin, ns, ownerKind);
    const loop = await withPodEnv({ name: chain.pod, namespace: ns }, () =>
      RunningCapacity.start(
        [`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=10m', '--capacity-min-refresh-interval=100ms', `--capacity-ownerref-level=${chain.level}`, '--capacity-status-expiry=2s'],
        { client, waitForSync: false },
      ),
    );
    const ac = new AbortController();
    const objects = async (): Promise<CSIStorageCapacity[]> => (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
    const warnings = async (): Promise<Event[]> => (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${cls},reason=NoPoolForDomain` })).items;
    // Steps finished, for the necessity check's wait (ScenarioRun.steps).
    const steps: number[] = [];
    const reached = (async () => {
      await loop.listed();
      steps.push(Date.now());
      await pollUntil(async () => {
        const [o] = await objects();
        expect(o?.capacity).to.equal('2Gi');
        expect(o?.metadata?.ownerReferences?.[0]).to.include(chain.owner);
        expect((await driverStatus(admin, driverName)).storage).to.have.length(1);
      }, ac.signal);
      steps.push(Date.now());
      // The CSIDriver appears after its CSIDriverCapacity: it becomes the owner.
      await admin.create(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: driverName }, spec: {} } as never);
      // More space, noticed because a volume of this driver was created in z1 (volume watch; the
      // periodic poll is 10 minutes away).
      driver.setCapacity({ [ZONE]: 'z1' }, 3n * GiB, { pool: 'p1' });
      await admin.create(Resources.persistentVolumes, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `${ns}-vol` },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: cls,
          persistentVolumeReclaimPolicy: 'Retain',
          csi: { driver: driverName, volumeHandle: `${ns}-vol` },
          nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: ['z1'] }] }] } },
        },
      } as KubeObject);
      await pollUntil(async () => {
        expect((await objects()).map((o) => o.capacity)).to.deep.equal(['3Gi']);
        const { head, shards } = await driverStatus(admin, driverName);
        for (const o of [head, ...shards]) expect(o?.metadata?.ownerReferences?.[0]).to.include({ kind: 'CSIDriver', name: driverName });
      }, ac.signal);
      steps.push(Date.now());
      // A failed provisioning refreshes p1 (claim and Event watches): the provisioner removes the
      // claim's selected-node, and later records ProvisioningFailed.
      const claims = loop.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
      driver.setCapacity({ [ZONE]: 'z1' }, 4n * GiB, { pool: 'p1' });
      const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'c1', namespace: ns, annotations: { [SELECTED_NODE]: node('n1') } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: cls },
      });
      await pollUntil(() => Promise.resolve(expect(claims.cache.get(`${ns}/c1`)).to.not.equal(undefined)), ac.signal);
      steps.push(Date.now());
      await admin.patch(Resources.persistentVolumeClaims, 'c1', ns, 'merge', { metadata: { annotations: { [SELECTED_NODE]: null } } });
      await pollUntil(async () => expect((await objects()).map((o) => o.capacity)).to.deep.equal(['4Gi']), ac.signal);
      steps.push(Date.now());
      driver.setCapacity({ [ZONE]: 'z1' }, 5n * GiB, { pool: 'p1' });
      const now = new Date().toISOString();
      await admin.create<Event>(Resources.events, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'c1.failed', namespace: ns },
        involvedObject: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name: 'c1', uid: claim.metadata!.uid! },
        reason: 'ProvisioningFailed',
        type: 'Warning',
        message: 'rpc error: code = ResourceExhausted desc = no space',
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
      });
      await pollUntil(async () => expect((await objects()).map((o) => o.capacity)).to.deep.equal(['5Gi']), ac.signal);
      steps.push(Date.now());
      // A zone without a pool, gone, and back: the same Warning twice (count 2).
      await addNode('n2', 'z2');
      await pollUntil(async () => expect(await warnings()).to.have.length(1), ac.signal);
      steps.push(Date.now());
      await removeNode('n2');
      await pollUntil(async () => expect((await admin.get<CSIDriverCapacity>(CSIDriverCapacities, driverName)).status?.conditions?.find((c) => c.type === 'PoolsCoverDomains')?.status).to.equal('True'), ac.signal);
      steps.push(Date.now());
      await addNode('n2', 'z2');
      await pollUntil(async () => expect((await warnings()).map((e) => e.count)).to.deep.equal([2]), ac.signal);
      steps.push(Date.now());
      await admin.delete(Resources.storageClasses, cls);
      await pollUntil(async () => expect(await objects()).to.have.length(0), ac.signal);
    })();
    return {
      reached,
      steps,
      stop: async () => {
        ac.abort();
        await loop.stop(2_000);
        await cleanup();
        for (const n of ['n1', 'n2']) await removeNode(n);
        await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
        await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
        await deleteDriverStatus(admin, driverName);
        await admin.delete(Resources.persistentVolumes, `${ns}-vol`).catch(() => undefined);
      },
    };
  };
}

/**
 * The per-node mode (--capacity-node-name): its writer reads its own shard by name (get), where the
 * central writer lists a driver's shards, and keeps that shard's summary on the head.
 */
function perNodeScenario(): NecessityScenario {
  return async (client, admin) => {
    await installCrds(admin);
    const ns = await createTestNamespace(admin, 'rbac-capnode-');
    const driverName = `${ns}-${randomBytes(2).toString('hex')}.csi.topovol.test`;
    const { driver, cleanup } = await startDriver({ name: driverName });
    driver.setCapacity({}, 5n * GiB);
    const node = `${ns}-n1`;
    const loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, `--capacity-node-name=${node}`, '--capacity-poll-interval=1s', '--capacity-status-expiry=1m'], { client, waitForSync: false });
    const ac = new AbortController();
    const reached = (async () => {
      await loop.listed();
      await pollUntil(async () => {
        const { head, storage } = await driverStatus(admin, driverName);
        expect(poolsOf(storage, '<ephemeral>')).to.deep.equal([node]);
        expect(head?.status).to.deep.include({ poolCount: 1, totalCapacity: '5Gi' });
      }, ac.signal);
    })();
    return {
      reached,
      stop: async () => {
        ac.abort();
        await loop.stop(2_000);
        await cleanup();
        await deleteDriverStatus(admin, driverName);
      },
    };
  };
}

describeRuleNecessity(capacityDescriptor, capacityScenario('Deployment'), {
  before: async () => {
    await installCrds((await sharedControlPlane()).adminClient());
  },
  variants: [
    ...(['StatefulSet', 'DaemonSet'] as const).map((kind) => ({
      name: `${kind}-owned`,
      scenario: capacityScenario(kind),
      covers: (atom: { group: string; resource: string }) => atom.group === 'apps' && atom.resource === `${kind.toLowerCase()}s`,
    })),
    { name: 'per-node', scenario: perNodeScenario(), covers: (atom) => atom.group === 'topovol.io' && atom.resource === 'csidrivercapacityshards' && atom.verb === 'get' },
  ],
});
