// The README's first command: a real etcd + kube-apiserver on loopback, the CRDs and samples from
// config/, and the controller-manager running against them until Ctrl-C.
import path from 'node:path';
import { Resources } from '../informer/resources.js';
import type { KubeClient } from '../client/kube-client.js';
import type { PersistentVolume, PersistentVolumeClaim, CSIStorageCapacity } from '../types/wire.js';
import { applyManifests, yamlFiles } from './apply-manifests.js';
import { ControlPlane } from './control-plane.js';
import { installCrds } from './install-crds.js';
import { ManagedProcess } from './managed-process.js';
import { repoRoot } from './repo-root.js';
import { createReadyNode } from './ready-node.js';
import { eventually } from './eventually.js';
import { CsiTestDriver } from './csi-test-driver/csi-test-driver.js';
import type { CSIDriver, CSINode, StorageClass } from '../types/wire.js';
import type { KubeObject } from '../informer/object-key.js';
import type { ResourceType } from '../informer/resources.js';

// The demo's CSI driver: the project's test driver over a real unix socket, with two nodes in two
// zones, so that the capacity loop has something to measure.
const DEMO_DRIVER = 'demo.csi.topovol.dev';
const DEMO_ZONE = 'topology.kubernetes.io/zone';
const DRIVER_CAPACITIES: ResourceType = { group: 'topovol.io', version: 'v1alpha1', plural: 'csidrivercapacities', kind: 'CSIDriverCapacity', namespaced: false };
// The pools are in shard objects labelled with the driver (docs/adr/0010); the head has the totals.
const DRIVER_CAPACITY_SHARDS: ResourceType = { group: 'topovol.io', version: 'v1alpha1', plural: 'csidrivercapacityshards', kind: 'CSIDriverCapacityShard', namespaced: false };

type StorageEntries = { storageClassName: string; pools?: { name: string; capacity?: string }[] }[];
interface DriverCapacity extends KubeObject {
  status?: { totalCapacity?: string; conditions?: { type: string; status: string; reason?: string }[] };
}
interface DriverCapacityShard extends KubeObject {
  status?: { storage?: StorageEntries };
}

async function demoDriver(client: KubeClient, dir: string): Promise<CsiTestDriver> {
  const driver = new CsiTestDriver({
    name: DEMO_DRIVER,
    controllerCapabilities: ['CREATE_DELETE_VOLUME', 'GET_CAPACITY'],
    capacity: [
      { segment: { [DEMO_ZONE]: 'zone-a' }, capacity: 100n << 30n },
      { segment: { [DEMO_ZONE]: 'zone-b' }, capacity: 20n << 30n, maximumVolumeSize: 5n << 30n },
    ],
  });
  await driver.start(`unix://${path.join(dir, 'demo-csi.sock')}`);
  await client.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DEMO_DRIVER }, spec: { attachRequired: false, storageCapacity: true } });
  for (const [node, zone] of [['demo-node-a', 'zone-a'], ['demo-node-b', 'zone-b']] as const) {
    await createReadyNode(client, node, { [DEMO_ZONE]: zone });
    await client.create<CSINode>(Resources.csiNodes, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: node }, spec: { drivers: [{ name: DEMO_DRIVER, nodeID: node, topologyKeys: [DEMO_ZONE] }] } });
  }
  await client.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'demo-capacity' }, provisioner: DEMO_DRIVER, volumeBindingMode: 'WaitForFirstConsumer' });
  return driver;
}

async function summary(client: KubeClient): Promise<string> {
  const pvcs = (await client.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims)).items;
  const pvs = (await client.list<PersistentVolume>(Resources.persistentVolumes)).items;
  const caps = (await client.list<CSIStorageCapacity>(Resources.csiStorageCapacities)).items;
  const lines = ['PersistentVolumeClaims:'];
  for (const c of pvcs) {
    const node = c.metadata?.annotations?.['volume.kubernetes.io/selected-node'];
    lines.push(`  ${c.metadata?.namespace}/${c.metadata?.name}  ${c.status?.phase ?? '?'}  volume=${c.spec?.volumeName || '-'}  class=${c.spec?.storageClassName ?? '-'}${node ? `  selected-node=${node}` : ''}`);
  }
  lines.push('PersistentVolumes:');
  for (const v of pvs) {
    const ref = v.spec?.claimRef;
    lines.push(`  ${v.metadata?.name}  ${v.status?.phase ?? '?'}  ${v.spec?.capacity?.storage ?? ''}  claim=${ref ? `${ref.namespace}/${ref.name}` : '-'}`);
  }
  if (caps.length) {
    lines.push('CSIStorageCapacities:');
    for (const c of caps) {
      const topo = Object.entries(c.nodeTopology?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
      lines.push(`  ${c.metadata?.namespace}/${c.metadata?.name}  class=${c.storageClassName}  ${topo}  capacity=${c.capacity ?? '-'}${c.maximumVolumeSize ? `  maxVolume=${c.maximumVolumeSize}` : ''}`);
    }
  }
  const agg = await client.get<DriverCapacity>(DRIVER_CAPACITIES, DEMO_DRIVER).catch(() => undefined);
  if (agg?.status) {
    const ready = agg.status.conditions?.find((c) => c.type === 'Ready');
    lines.push(`CSIDriverCapacity ${DEMO_DRIVER}: total=${agg.status.totalCapacity ?? '-'}  Ready=${ready?.status ?? '?'}${ready?.reason ? ` (${ready.reason})` : ''}`);
    const shards = await client.list<DriverCapacityShard>(DRIVER_CAPACITY_SHARDS, { labelSelector: `capacity.topovol.io/driver=${DEMO_DRIVER}` }).catch(() => ({ items: [] }));
    const byClass = new Map<string, string[]>();
    for (const s of shards.items.flatMap((o) => o.status?.storage ?? [])) byClass.set(s.storageClassName, [...(byClass.get(s.storageClassName) ?? []), ...(s.pools ?? []).map((p) => `${p.name}=${p.capacity ?? '-'}`)]);
    for (const [cls, pools] of [...byClass].sort(([a], [b]) => (a < b ? -1 : 1))) lines.push(`  ${cls}: ${pools.sort().join('  ')}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const root = repoRoot();
  const cp = new ControlPlane({ keepDir: true });
  process.stdout.write('Starting etcd and kube-apiserver (building them first if not cached)...\n');
  await cp.start();
  const admin = cp.adminClient();
  await installCrds(admin);
  const sampleFiles = yamlFiles(path.join(root, 'config', 'samples'));
  const isClaim = (o: KubeObject): boolean => o.kind === 'PersistentVolumeClaim';
  // Claims come once the binder has made the sample volumes Available: as with
  // kube-controller-manager, only Available volumes are candidates, so a claim created with brand
  // new volumes could take whichever one happened to be ready first, not the smallest.
  const samples = await applyManifests(admin, sampleFiles, (o) => !isClaim(o));
  const driver = await demoDriver(admin, cp.dir);
  // The README's ports; a test running the demo next to other suites moves them.
  const metricsAddr = process.env.TOPOVOL_DEMO_METRICS_ADDRESS ?? '127.0.0.1:8080';
  const probeAddr = process.env.TOPOVOL_DEMO_PROBE_ADDRESS ?? '127.0.0.1:8081';
  const manager = new ManagedProcess({
    name: 'topovol-controller-manager',
    command: process.execPath,
    args: [path.join(root, 'bin', 'topovol-controller-manager.js'), `--kubeconfig=${cp.kubeconfigPath}`, '--leader-elect-namespace=default', `--metrics-bind-address=${metricsAddr}`, `--health-probe-bind-address=${probeAddr}`, '--log-format=text',
      // Every loop; capacity for the demo driver, its objects in "default".
      '--controllers=*,zonal-pv-upgrade,capacity,rollback', `--csi-address=${driver.endpoint}`, '--capacity-namespace=default', '--capacity-ownerref-level=-1', '--capacity-poll-interval=30s'],
    logFile: path.join(cp.dir, 'manager.log'),
  });
  await eventually(async () => {
    const free = (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => !v.spec?.claimRef);
    if (free.some((v) => v.status?.phase !== 'Available')) throw new Error('sample volumes not Available yet');
  }, 120_000);
  samples.push(...(await applyManifests(admin, sampleFiles, isClaim)));
  process.stdout.write(
    [
      '',
      `Control plane:   ${cp.url}`,
      `kubeconfig:      export KUBECONFIG=${cp.kubeconfigPath}`,
      `Manager log:     ${manager.logFile}`,
      `Metrics:         http://${metricsAddr}/metrics   probes: http://${probeAddr}/readyz`,
      `Samples applied: ${samples.length} objects from config/samples`,
      `CSI driver:      ${DEMO_DRIVER} (the project's test driver) on ${driver.endpoint}, nodes demo-node-a (zone-a) and demo-node-b (zone-b)`,
      'Press Ctrl-C to stop everything.',
      '',
    ].join('\n'),
  );
  let last = '';
  const timer = setInterval(() => {
    void summary(admin)
      .then((s) => {
        if (s !== last) process.stdout.write(`\n${new Date().toISOString()}\n${s}\n`);
        last = s;
      })
      .catch(() => undefined);
  }, 2000);
  const stop = async (): Promise<void> => {
    clearInterval(timer);
    process.stdout.write('\nStopping...\n');
    await manager.stop();
    await driver.stop();
    await cp.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  void manager.waitForExit().then((code) => {
    if (code !== 0 && code !== null) process.stderr.write(`manager exited with code ${code}:\n${manager.logTail()}\n`);
  });
}

await main();
