import path from 'node:path';
import { cpuSeconds, eventually, ManagedProcess, perNodeProvisionerArgs, startManagerBinary } from '@topovol/testing';
import type { BenchCluster } from './bench-cluster.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { INITIAL_BYTES } from './bench-objects.js';
import type { CapacityWatch } from './capacity-watch.js';
import { installNamespace } from './identities.js';
import type { BenchNode } from './node-drivers.js';

/** One publishing instance's start: from its process start to its node's objects published. */
export interface InstanceStart {
  node: string;
  /** Date.now() at its process start, and how long until its objects were published. */
  startedAt: number;
  ms: number;
  /** CPU (utime + stime) the process had used by then. */
  cpuSeconds: number;
}

export interface RunningContender {
  name: ContenderName;
  /** The processes that publish capacity, one per node: the ones measured. */
  publishers: ManagedProcess[];
  /** Processes of the deployment that publish no capacity (Topovol's run: the provisioning-only external-provisioners). */
  companions: ManagedProcess[];
  /** When the first publisher was started. */
  publishersStartedAt: number;
  /** Per publisher, its own start. */
  starts: InstanceStart[];
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
  // Node's own flags, e.g. --cpu-prof --cpu-prof-dir=DIR (NODE_OPTIONS refuses --cpu-prof).
  const nodeArgs = (process.env.TOPOVOL_BENCH_NODE_FLAGS ?? '').split(' ').filter((a) => a !== '');
  return startManagerBinary({
    nodeArgs,
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
 * Starts a publisher and holds its start slot until its node's objects are all published with
 * their first figure: the same gate for both contenders, whatever each process offers as a
 * readiness signal, so the start-up rows compare the same thing.
 */
async function published(c: BenchCluster, watch: CapacityWatch, n: BenchNode, start: () => Promise<ManagedProcess>): Promise<{ proc: ManagedProcess; start: InstanceStart }> {
  const began = Date.now();
  const proc = await start();
  const at = await watch.until(
    c.classes.map((cls) => ({ node: n.name, cls, bytes: Number(INITIAL_BYTES) })),
    5 * 60_000,
  );
  if (at === undefined) throw new Error(`${proc.name} did not publish its objects within 5m; its log (${proc.logFile}):\n${proc.logTail(30)}`);
  return { proc, start: { node: n.name, startedAt: began, ms: at - began, cpuSeconds: proc.pid !== undefined ? (cpuSeconds(proc.pid) ?? 0) : 0 } };
}

/**
 * upstream: one external-provisioner per node with --enable-capacity, provisioning and publishing.
 * topovol: one external-provisioner per node without capacity (provisioning stays its job), and
 * one Topovol capacity instance per node publishing.
 */
export async function startContender(name: ContenderName, o: BenchOptions, c: BenchCluster, provisionerBinary: string, watch: CapacityWatch): Promise<RunningContender> {
  if (name === 'upstream') {
    say(`upstream: ${c.nodes.length} external-provisioners with --enable-capacity, ${o.startConcurrency} starting at a time`);
    const publishersStartedAt = Date.now();
    const started = await startAll(c.nodes, o.startConcurrency, (n) => published(c, watch, n, () => startProvisioner(o, c, n, provisionerBinary, true)));
    return { name, publishers: started.map((s) => s.proc), companions: [], publishersStartedAt, starts: started.map((s) => s.start), publisherUser: c.provisioner.user };
  }
  say(`topovol: ${c.nodes.length} external-provisioners without capacity, for provisioning`);
  const companions = await startAll(c.nodes, o.startConcurrency, (n) => startProvisioner(o, c, n, provisionerBinary, false));
  say(`topovol: ${c.nodes.length} topovol-controller-manager --controllers=capacity --capacity-node-name=<node>, ${o.startConcurrency} starting at a time`);
  const publishersStartedAt = Date.now();
  const started = await startAll(c.nodes, o.startConcurrency, (n) =>
    published(c, watch, n, async () => {
      const p = await startTopovol(o, c, n);
      c.addTeardown(() => p.stop());
      return p;
    }),
  );
  return { name, publishers: started.map((s) => s.proc), companions, publishersStartedAt, starts: started.map((s) => s.start), publisherUser: c.topovol.user, companionUser: c.provisioner.user };
}
