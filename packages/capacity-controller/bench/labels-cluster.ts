import path from 'node:path';
import { CsiTestDriver, GiB } from '@topovol/testing/csi-test-driver';
import { createReadyNode, ManagedProcess, registerDriverOnNode, startManagerBinary } from '@topovol/testing';
import { startBenchControlPlane } from './bench-cluster.js';
import type { BenchControlPlane } from './bench-cluster.js';
import type { ContenderName } from './bench-flags.js';
import { className, DRIVER, INITIAL_BYTES, nodeName, storageClass } from './bench-objects.js';
import { installNamespace } from './identities.js';
import type { LabelsBenchOptions } from './labels-flags.js';

/** The zone label: the driver's only topology key here, so segments are zones (KEP-1472 central provisioning). */
export const ZONE_KEY = 'topology.capacity-bench.csi.topovol.dev/zone';
export const zoneName = (k: number): string => `cb-zone-${k}`;
/** The zone of its own a moved node goes to: a segment no node had. */
export const movedZone = (p: number): string => `cb-zone-moved-${p}`;
/** What the driver reports for a moved-to zone, so its objects are told apart from the others by their figure too. */
export const MOVED_BYTES = 42n * GiB;

export interface LabelsCluster extends BenchControlPlane {
  /** Node name → the zone it starts in. */
  zones: Map<string, string>;
  /** One controller-side driver for the whole cluster, answering GetCapacity per zone. */
  driver: CsiTestDriver;
  socket: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * The control plane with --nodes Ready nodes round-robin over --zones zones, each registered for
 * the driver with the zone key as its only topology key (a CSINode as kubelet writes it), and one
 * instance of the test driver for the whole cluster (a central controller): every zone's pool
 * full, every moved-to zone's pool at MOVED_BYTES. The classes share that pool.
 */
export async function startLabelsCluster(label: string, o: LabelsBenchOptions): Promise<LabelsCluster> {
  const base = await startBenchControlPlane(
    label,
    Array.from({ length: o.classes }, (_, j) => storageClass('shared', className(j))),
  );
  try {
    const capacity = [
      ...Array.from({ length: o.zones }, (_, k) => ({ segment: { [ZONE_KEY]: zoneName(k) }, capacity: INITIAL_BYTES })),
      ...Array.from({ length: o.moves }, (_, p) => ({ segment: { [ZONE_KEY]: movedZone(p) }, capacity: MOVED_BYTES })),
    ];
    const driver = new CsiTestDriver({ name: DRIVER, capacity });
    const socket = path.join(base.dir, 'controller.sock');
    await driver.start(socket);
    base.addTeardown(() => driver.stop());
    say(`${label}: ${o.nodes} nodes over ${o.zones} zones, one CSI driver instance for all`);
    const zones = new Map<string, string>();
    for (let i = 0; i < o.nodes; i++) {
      const n = nodeName(i);
      zones.set(n, zoneName(i % o.zones));
      await createReadyNode(base.admin, n, { [ZONE_KEY]: zones.get(n)! });
      await registerDriverOnNode(base.admin, n, DRIVER, [ZONE_KEY]);
    }
    return { ...base, zones, driver, socket };
  } catch (err) {
    await base.stop();
    throw err;
  }
}

const seconds = (ms: number): string => `${ms / 1000}s`;

/**
 * The contender's one capacity publisher for the cluster. upstream: external-provisioner with
 * --enable-capacity and no --node-deployment, which derives segments from CSINodes and Node labels
 * (pkg/capacity/topology/nodes.go). topovol: the capacity loop without --capacity-node-name
 * (segments from CSINode topology keys and Node labels, the default --capacity-topology=csinode).
 * No provisioning happens in this bench, so Topovol's run has no external-provisioner next to it.
 */
export async function startLabelsContender(name: ContenderName, o: LabelsBenchOptions, c: LabelsCluster, provisionerBinary: string): Promise<{ proc: ManagedProcess; user: string }> {
  if (name === 'upstream') {
    const proc = new ManagedProcess({
      name: 'csi-provisioner',
      command: provisionerBinary,
      args: [
        `--csi-address=${c.socket}`,
        `--kubeconfig=${c.provisioner.kubeconfig}`,
        '--leader-election=false',
        '--enable-capacity=true',
        `--capacity-poll-interval=${seconds(o.pollIntervalMs)}`,
        '--capacity-ownerref-level=-1',
        '--v=3',
        ...o.upstreamFlags,
      ],
      logFile: path.join(c.dir, 'csi-provisioner.log'),
      // NAMESPACE: where its CSIStorageCapacity objects go, as a Deployment's downward API sets it.
      env: { ...process.env, NAMESPACE: installNamespace() },
    });
    c.addTeardown(() => proc.stop());
    return { proc, user: c.provisioner.user };
  }
  const nodeArgs = (process.env.TOPOVOL_BENCH_NODE_FLAGS ?? '').split(' ').filter((a) => a !== '');
  const proc = await startManagerBinary({
    nodeArgs,
    name: 'topovol-capacity',
    kubeconfig: c.topovol.kubeconfig,
    args: [
      '--controllers=capacity',
      '--leader-elect=false',
      `--csi-address=unix://${c.socket}`,
      `--capacity-namespace=${installNamespace()}`,
      '--capacity-ownerref-level=-1',
      `--capacity-poll-interval=${seconds(o.pollIntervalMs)}`,
      ...o.topovolFlags,
    ],
    logFile: path.join(c.dir, 'topovol-capacity.log'),
    readyTimeoutMs: 300_000,
  });
  c.addTeardown(() => proc.stop());
  return { proc, user: c.topovol.user };
}
