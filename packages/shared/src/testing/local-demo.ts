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
    for (const c of caps) lines.push(`  ${c.metadata?.namespace}/${c.metadata?.name}  class=${c.storageClassName}  capacity=${c.capacity ?? '-'}`);
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
  const samples = await applyManifests(admin, yamlFiles(path.join(root, 'config', 'samples')));
  const manager = new ManagedProcess({
    name: 'topovol-controller-manager',
    command: process.execPath,
    args: [path.join(root, 'bin', 'topovol-controller-manager.js'), `--kubeconfig=${cp.kubeconfigPath}`, '--leader-elect-namespace=default', '--metrics-bind-address=127.0.0.1:8080', '--health-probe-bind-address=127.0.0.1:8081', '--log-format=text'],
    logFile: path.join(cp.dir, 'manager.log'),
  });
  process.stdout.write(
    [
      '',
      `Control plane:   ${cp.url}`,
      `kubeconfig:      export KUBECONFIG=${cp.kubeconfigPath}`,
      `Manager log:     ${manager.logFile}`,
      'Metrics:         http://127.0.0.1:8080/metrics   probes: http://127.0.0.1:8081/readyz',
      `Samples applied: ${samples.length} objects from config/samples`,
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
