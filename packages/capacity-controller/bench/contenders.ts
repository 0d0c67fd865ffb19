import path from 'node:path';
import { eventually, ManagedProcess, perNodeProvisionerArgs, startManagerBinary } from '@topovol/shared/testing';
import type { BenchCluster } from './bench-cluster.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { installNamespace } from './identities.js';
import type { BenchNode } from './node-drivers.js';

export interface RunningContender {
  name: ContenderName;
  /** The processes that publish capacity, one per node: the ones measured. */
  publishers: ManagedProcess[];
  /** Processes of the deployment that publish no capacity (Topovol's run: the provisioning-only external-provisioners). */
  companions: ManagedProcess[];
  /** When the first publisher was started. */
  publishersStartedAt: number;
  /** Audit-log users of publishers and companions. */
  publisherUser: string;
  companionUser?: string;
}

const seconds = (ms: number): string => `${ms / 1000}s`;

/** Starts the node's external-provisioner; resolves once it has asked the driver who it is (NodeGetInfo). */
async function startProvisioner(o: BenchOptions, c: BenchCluster, n: BenchNode, binary: string, capacity: boolean): Promise<ManagedProcess> {
  const proc = new ManagedProcess({
    name: `csi-provisioner-${n.name}`,
    command: binary,
    args: [
      ...perNodeProvisionerArgs({ socket: n.socket, kubeconfig: c.provisioner.kubeconfig, ...(capacity ? { capacityPollInterval: seconds(o.pollIntervalMs) } : {}) }),
      ...(capacity ? o.upstreamFlags : []),
    ],
    logFile: path.join(c.dir, `csi-provisioner-${n.name}.log`),
    // NAMESPACE: where its CSIStorageCapacity objects go, as a DaemonSet's downward API sets it.
    env: { ...process.env, NODE_NAME: n.name, NAMESPACE: installNamespace() },
  });
  c.addTeardown(() => proc.stop());
  await eventually(
    () => {
      if (!proc.running) throw new Error(`exited:\n${proc.logTail(20)}`);
      if (n.driver.calls('NodeGetInfo') < 1) throw new Error('has not asked the driver yet');
      return Promise.resolve();
    },
    120_000,
    100,
  );
  return proc;
}

/**
 * The real topovol-controller-manager binary with only the capacity loop, per node (a DaemonSet
 * next to the driver): --capacity-node-name, no leader election, the loop's ServiceAccount. Its
 * flags keep their defaults except the poll interval (the same as external-provisioner's) and
 * the owner (none here, as for external-provisioner).
 */
function startTopovol(o: BenchOptions, c: BenchCluster, n: BenchNode): Promise<ManagedProcess> {
  return startManagerBinary({
    name: `topovol-capacity-${n.name}`,
    kubeconfig: c.topovol.kubeconfig,
    args: [
      '--controllers=capacity',
      '--leader-elect=false',
      `--csi-address=unix://${n.socket}`,
      `--capacity-node-name=${n.name}`,
      `--capacity-namespace=${installNamespace()}`,
      '--capacity-ownerref-level=-1',
      `--capacity-poll-interval=${seconds(o.pollIntervalMs)}`,
      ...o.topovolFlags,
    ],
    logFile: path.join(c.dir, `topovol-capacity-${n.name}.log`),
    readyTimeoutMs: 300_000,
  });
}

/** Runs `start` over the nodes, at most `limit` at once (50 Node.js processes starting together would starve two cores). */
async function startAll<T>(nodes: readonly BenchNode[], limit: number, start: (n: BenchNode) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(nodes.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < nodes.length) {
      const i = next++;
      out[i] = await start(nodes[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, nodes.length) }, worker));
  return out;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * upstream: one external-provisioner per node with --enable-capacity, provisioning and publishing.
 * topovol: one external-provisioner per node without capacity (provisioning stays its job), and
 * one Topovol capacity instance per node publishing.
 */
export async function startContender(name: ContenderName, o: BenchOptions, c: BenchCluster, provisionerBinary: string): Promise<RunningContender> {
  if (name === 'upstream') {
    say(`upstream: ${c.nodes.length} external-provisioners with --enable-capacity`);
    const publishersStartedAt = Date.now();
    const publishers = await startAll(c.nodes, o.startConcurrency, (n) => startProvisioner(o, c, n, provisionerBinary, true));
    return { name, publishers, companions: [], publishersStartedAt, publisherUser: c.provisioner.user };
  }
  say(`topovol: ${c.nodes.length} external-provisioners without capacity, for provisioning`);
  const companions = await startAll(c.nodes, o.startConcurrency, (n) => startProvisioner(o, c, n, provisionerBinary, false));
  say(`topovol: ${c.nodes.length} topovol-controller-manager --controllers=capacity --capacity-node-name=<node>, ${o.startConcurrency} starting at a time`);
  const publishersStartedAt = Date.now();
  const publishers = await startAll(c.nodes, o.startConcurrency, async (n) => {
    const p = await startTopovol(o, c, n);
    c.addTeardown(() => p.stop());
    return p;
  });
  return { name, publishers, companions, publishersStartedAt, publisherUser: c.topovol.user, companionUser: c.provisioner.user };
}
