// The README's run command (hack/demo.sh): the real storage stack on this machine, a short story
// of what Topovol is for, then the cluster stays up for kubectl until Ctrl-C.
import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { GiB } from './csi-test-driver/byte-size.js';
import { capacityPlacement, createClasses, DEMO_DRIVER, DEMO_NODE_KEY, DEMO_NS, delayedBinding, NODE_1, NODE_2, NODE_3, rollback, STORY, zonalUpgrade } from './demo/demo-story.js';
import { staleCapacity } from './stack/stale-capacity-story.js';
import { REGION, volumeTopology, ZONE } from './stack/stack-objects.js';
import { StorageStack } from './stack/storage-stack.js';

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** Every claim in the cluster with its phase, volume and the volume's node; and whether all are Bound. */
async function claimsTable(admin: KubeClient): Promise<{ lines: string[]; allBound: boolean; count: number }> {
  const claims = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims)).items;
  const volumes = new Map((await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.map((v) => [v.metadata?.name ?? '', v]));
  const lines = claims.map((c) => {
    const v = volumes.get(c.spec?.volumeName ?? '');
    const where = v ? (volumeTopology(v, DEMO_NODE_KEY) ?? volumeTopology(v, ZONE) ?? JSON.stringify(v.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.map((e) => e.values).flat())) : '-';
    return `  ${`${c.metadata?.namespace}/${c.metadata?.name}`.padEnd(22)} ${(c.status?.phase ?? '?').padEnd(8)} ${(c.spec?.volumeName || '-').padEnd(42)} ${where}`;
  });
  return { lines, allBound: claims.length > 0 && claims.every((c) => c.status?.phase === 'Bound'), count: claims.length };
}

async function main(): Promise<void> {
  say('Starting the storage stack (binaries are built from the Go module proxy on first use and cached)...');
  const stack = await StorageStack.start({
    driver: DEMO_DRIVER,
    topologyKey: DEMO_NODE_KEY,
    nodes: [
      { name: NODE_1, labels: { [ZONE]: 'zone-a', [REGION]: 'demo-region' }, capacity: 50n * GiB },
      { name: NODE_2, labels: { [ZONE]: 'zone-b', [REGION]: 'demo-region' }, capacity: 50n * GiB },
      { name: NODE_3, labels: { [ZONE]: 'zone-b', [REGION]: 'demo-region' }, capacity: 0n },
    ],
    // Refreshed on volume and provisioning events; hourly polls keep step 3's stale figure in place.
    perNodeCapacityArgs: ['--capacity-poll-interval=1h'],
    metrics: true,
    keepDir: true,
    log: (line) => say(`   ${line}`),
  });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    say('\nStopping...');
    await stack.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());

  const admin = stack.admin;
  say('');
  say(`Running: etcd, kube-apiserver, kube-scheduler, kube-controller-manager (PV/PVC protection only: Topovol is the only binder),`);
  say(`  and on ${NODE_1} (zone-a), ${NODE_2} and ${NODE_3} (zone-b) each: the CSI driver ${DEMO_DRIVER}, its external-provisioner and Topovol's capacity instance;`);
  say(`  Topovol's pv-binder, zonal-pv-upgrade and rollback loops, each as its own ServiceAccount. Logs: ${stack.cp.dir}`);
  say(`kubeconfig: export KUBECONFIG=${stack.cp.kubeconfigPath}`);
  say('');
  await admin.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEMO_NS } });
  await createClasses(admin);
  // Published long before the pod of step 3 arrives, as in a cluster that has been running.
  await staleCapacity(stack, STORY);
  const ctx = { stack, say };
  try {
    for (const step of [delayedBinding, capacityPlacement, rollback, zonalUpgrade]) await step(ctx);
  } catch (err) {
    say(`The story stopped: ${err instanceof Error ? err.message : String(err)}`);
  }
  const table = await claimsTable(admin);
  say('');
  say(table.allBound ? `Steady state: all ${table.count} claims are Bound.` : 'Not every claim is Bound:');
  for (const line of table.lines) say(line);
  say('');
  say('Try: kubectl get pods,pvc -n demo -o wide; kubectl get pv,csistoragecapacities -A; kubectl describe pod -n demo app; kubectl get provisioningrollbacks');
  for (const [loop, url] of stack.metricsUrls) say(`Metrics of ${loop}: ${url}`);
  say('Press Ctrl-C to stop everything.');
  let last = table.lines.join('\n');
  setInterval(() => {
    if (stopping) return;
    void claimsTable(admin)
      .then((t) => {
        const now = t.lines.join('\n');
        if (now !== last) say(`\n${new Date().toISOString()} claims changed:\n${now}`);
        last = now;
      })
      .catch(() => undefined);
  }, 2000);
}

await main();
