import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import { INSTALL_NAMESPACE } from '@topovol/manifests';
import type { CSIDriver, CSIStorageCapacity } from '@topovol/shared';
import { accessRecords, readAuditLog } from '../audit-log.js';
import type { AuthorizationRecord } from '../audit-log.js';
import { CLUSTER_ADMISSION_FLAGS, ControlPlane } from '../control-plane.js';
import { controlPlaneBinaries } from '../control-plane-binaries.js';
import { installGeneratedRbac } from '../controller-identity.js';
import { csiBinaries } from '../csi-binaries.js';
import { freePort } from '../free-port.js';
import { installCrds } from '../install-crds.js';
import { startKubeControllerManager } from '../kube-controller-manager.js';
import { startKubeScheduler } from '../kube-scheduler.js';
import type { ManagedProcess } from '../managed-process.js';
import { StackNode } from './stack-node.js';
import type { StackNodeSpec } from './stack-node.js';
import { startCentralLoop, startPerNodeCapacity, TOPOVOL_LOOPS } from './topovol-workloads.js';
import type { TopovolLoop } from './topovol-workloads.js';

/** The controllers kube-controller-manager always runs here: the finalizers of deleted claims and volumes. Never its binder: Topovol binds. */
const PROTECTION_CONTROLLERS = ['persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller'];

export interface StorageStackOptions {
  /** The CSI driver's name (its provisioner name in StorageClasses). */
  driver: string;
  /** The driver's topology key; each node is its own segment {key: node}. */
  topologyKey: string;
  nodes: readonly StackNodeSpec[];
  /** Topovol loops not to start: to show what fails without them. */
  loopsOff?: readonly TopovolLoop[];
  /** kube-controller-manager controllers besides the two protection controllers (none of which may bind volumes). */
  extraKcmControllers?: readonly string[];
  /** Extra flags for every per-node capacity instance (e.g. a longer --capacity-poll-interval). */
  perNodeCapacityArgs?: readonly string[];
  /** Serve each Topovol process's /metrics on a free loopback port (see `metricsUrls`). */
  metrics?: boolean;
  /** Keep the control plane's directory (logs, etcd data) after stop. */
  keepDir?: boolean;
  /** Progress lines while starting. */
  log?: (line: string) => void;
}

/**
 * The real storage stack on one machine, no kubelet: etcd and kube-apiserver; kube-scheduler;
 * kube-controller-manager with the PV/PVC protection controllers (and any extra ones, never its
 * binder); per simulated node a CSI test driver and external-provisioner --node-deployment; and
 * Topovol's loops as config/manager runs them, each as its ServiceAccount: pv-binder,
 * zonal-pv-upgrade and rollback centrally, capacity once per node. Logs are in `cp.dir`.
 * Stops whatever it started if a step fails.
 */
export class StorageStack {
  readonly topovol = new Map<string, ManagedProcess>();
  /** Each Topovol process's /metrics URL, with the `metrics` option. */
  readonly metricsUrls = new Map<string, string>();
  private readonly teardown: (() => Promise<void>)[] = [];
  readonly nodes: StackNode[] = [];
  scheduler!: ManagedProcess;
  kcm!: ManagedProcess;
  private adminClient?: KubeClient;

  private constructor(
    readonly cp: ControlPlane,
    readonly opts: StorageStackOptions,
  ) {}

  /** An unthrottled admin client (system:masters), once the control plane runs. */
  get admin(): KubeClient {
    this.adminClient ??= this.cp.adminClient();
    return this.adminClient;
  }

  static async start(opts: StorageStackOptions): Promise<StorageStack> {
    const log = opts.log ?? ((): void => undefined);
    log('building or finding kube-scheduler, kube-controller-manager and csi-provisioner (cached after the first build)');
    await controlPlaneBinaries(['kube-scheduler', 'kube-controller-manager']);
    const { 'csi-provisioner': provisionerBinary } = await csiBinaries(['csi-provisioner']);
    const cp = new ControlPlane({ keepDir: opts.keepDir, apiServerFlags: [...CLUSTER_ADMISSION_FLAGS] });
    const stack = new StorageStack(cp, opts);
    stack.teardown.push(() => cp.stop());
    try {
      log(`starting etcd and kube-apiserver (logs in ${cp.dir})`);
      await cp.start();
      stack.teardown.push(() => Promise.resolve(stack.adminClient?.close()));
      await stack.startCluster(provisionerBinary, log);
      return stack;
    } catch (err) {
      await stack.stop();
      throw err;
    }
  }

  private async startCluster(provisionerBinary: string, log: (line: string) => void): Promise<void> {
    const { cp, admin, opts } = this;
    await installCrds(admin);
    await installGeneratedRbac(cp);
    // storageCapacity: the scheduler filters and scores nodes by CSIStorageCapacity (KEP-1472).
    // attachRequired false: node-local storage attaches nothing (no VolumeAttachments).
    await admin.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: opts.driver }, spec: { attachRequired: false, storageCapacity: true } });
    log('starting kube-scheduler and kube-controller-manager');
    this.scheduler = await startKubeScheduler(cp);
    this.teardown.push(() => this.scheduler.stop());
    this.kcm = await startKubeControllerManager(cp, [...PROTECTION_CONTROLLERS, ...(opts.extraKcmControllers ?? [])]);
    this.teardown.push(() => this.kcm.stop());
    const ctx = { cp, admin, dir: cp.dir, driverName: opts.driver, topologyKey: opts.topologyKey, provisionerBinary };
    for (const spec of opts.nodes) {
      log(`node ${spec.name}: CSI driver and csi-provisioner`);
      const node = await StackNode.start(ctx, spec);
      this.teardown.push(() => node.stop());
      this.nodes.push(node);
    }
    const off = new Set(opts.loopsOff ?? []);
    for (const loop of TOPOVOL_LOOPS.filter((l) => !off.has(l))) {
      if (loop === 'capacity') {
        for (const node of this.nodes) {
          log(`Topovol capacity for ${node.name}`);
          const name = `capacity-${node.name}`;
          await this.track(name, startPerNodeCapacity(cp, admin, node, cp.dir, opts.perNodeCapacityArgs, await this.metricsAddress(name)));
        }
      } else {
        log(`Topovol ${loop}`);
        await this.track(loop, startCentralLoop(cp, loop, cp.dir, await this.metricsAddress(loop)));
      }
    }
  }

  private async metricsAddress(name: string): Promise<string | undefined> {
    if (!this.opts.metrics) return undefined;
    const address = `127.0.0.1:${await freePort()}`;
    this.metricsUrls.set(name, `http://${address}/metrics`);
    return address;
  }

  private async track(name: string, started: Promise<ManagedProcess>): Promise<void> {
    const p = await started;
    this.topovol.set(name, p);
    this.teardown.push(() => p.stop());
  }

  node(name: string): StackNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name} in the stack`);
    return n;
  }

  /** The CSIStorageCapacity objects published for a class, by node (Topovol's per-node instances write them to the install namespace). */
  async publishedCapacity(cls: string): Promise<Map<string, CSIStorageCapacity>> {
    const items = (await this.admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: INSTALL_NAMESPACE })).items;
    return new Map(items.filter((c) => c.storageClassName === cls).map((c) => [c.nodeTopology?.matchLabels?.[this.opts.topologyKey] ?? '', c]));
  }

  /** Every long-running process, to check that none has died. */
  processes(): ManagedProcess[] {
    return [this.scheduler, this.kcm, ...this.nodes.map((n) => n.provisioner), ...this.topovol.values()];
  }

  /** Throws with the log tail of the first process that is no longer running. */
  requireAllRunning(): void {
    const dead = this.processes().find((p) => !p.running);
    if (dead) throw new Error(`${dead.name} exited; its log (${dead.logFile}):\n${dead.logTail(40)}`);
  }

  /** Requests of Topovol's ServiceAccounts that RBAC or OwnerReferencesPermissionEnforcement refused, from kube-apiserver's audit log. */
  refusals(): AuthorizationRecord[] {
    const prefix = `system:serviceaccount:${INSTALL_NAMESPACE}:`;
    return accessRecords(readAuditLog(this.cp.auditLogPath)).filter((r) => r.user.startsWith(prefix) && !r.allowed);
  }

  async stop(): Promise<void> {
    for (const t of this.teardown.splice(0).reverse()) await t().catch(() => undefined);
  }
}
