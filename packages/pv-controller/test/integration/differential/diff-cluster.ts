import path from 'node:path';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { ControlPlane, controllerClient, eventually, freePort, InProcessLoop, ManagedProcess, scrapeKubeControllerManager, startKubeControllerManager, startKubeScheduler } from '@topovol/testing';
import { csiBinaries, CsiTestDriver, GiB } from '@topovol/testing/csi-test-driver';
import { pvBinderDescriptor } from '../../../src/pv-binder-descriptor.js';
import { zonalPvUpgradeDescriptor } from '../../../src/zonal-pv-upgrade-descriptor.js';
import type { ClusterView } from './diff-state.js';

export type SideName = 'upstream' | 'topovol';

/**
 * Both binders re-sync every claim and volume this often (kube-controller-manager's
 * --pvclaimbinder-sync-period, and ours of the same name); shorter than the default 15 s only so
 * that a state can be called settled sooner. A state unchanged for QUIET_MS spans two re-syncs.
 */
export const SYNC_PERIOD_S = 5;
export const QUIET_MS = 2 * SYNC_PERIOD_S * 1000 + 2_000;
/** Topovol's --stale-selected-node-grace here: short, so that what it does after the grace shows. */
export const TOPOVOL_GRACE_S = 3;

/**
 * The driver the real external-provisioner v6.3.0 serves on each side (the project's CSI test
 * driver over gRPC): scenarios whose class names it get real provisioning and deletion. Classes of
 * the suite's other provisioner name are provisioned by hand in the scenario.
 */
export const REAL_PROVISIONER = 'real.csi.topovol.dev';

const PROTECTION = ['persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller'];

/**
 * One side of the differential suite: its own etcd and kube-apiserver, kube-controller-manager
 * with the two protection controllers (and, on the upstream side, its persistentvolume binder), the
 * real kube-scheduler, and on the Topovol side the pv-binder loop (and zonal-pv-upgrade, which must
 * never change where a volume can be used) each as its own ServiceAccount with the generated RBAC. The DefaultStorageClass admission plugin is off on both, so that a claim created
 * without a class keeps it unset and only the binder's retroactive assignment can fill it in.
 * Every second, one list of each kind feeds every scenario's view of this side.
 */
export class DiffCluster {
  private latest: ClusterView = { claims: [], volumes: [], pods: [], events: [] };
  private generation = 0;
  private waiters: (() => void)[] = [];
  private polling = true;
  private poller?: Promise<void>;

  private constructor(
    readonly side: SideName,
    readonly cp: ControlPlane,
    readonly admin: KubeClient,
    private readonly processes: ManagedProcess[],
    private readonly loops: InProcessLoop[],
    /** Upstream: the port of kube-controller-manager's /metrics. */
    private readonly metricsPort?: number,
    private readonly driver?: CsiTestDriver,
  ) {}

  static async start(side: SideName): Promise<DiffCluster> {
    const cp = new ControlPlane({ apiServerFlags: ['--disable-admission-plugins=DefaultStorageClass'] });
    await cp.start();
    const admin = cp.adminClient();
    const controllers = side === 'upstream' ? ['persistentvolume-binder-controller', ...PROTECTION] : PROTECTION;
    const metricsPort = side === 'upstream' ? await freePort() : undefined;
    const processes: ManagedProcess[] = [];
    const loops: InProcessLoop[] = [];
    let driver: CsiTestDriver | undefined;
    try {
      processes.push(await startKubeControllerManager(cp, controllers, [`--pvclaimbinder-sync-period=${SYNC_PERIOD_S}s`], { metricsPort }), await startKubeScheduler(cp));
      if (side === 'topovol') {
        loops.push(
          await InProcessLoop.start(pvBinderDescriptor, [`--pvclaimbinder-sync-period=${SYNC_PERIOD_S}s`, `--stale-selected-node-grace=${TOPOVOL_GRACE_S}s`, '--concurrent-pv-binder-syncs=4'], {
            client: await controllerClient('pv-binder', cp),
          }),
          await InProcessLoop.start(zonalPvUpgradeDescriptor, [], { client: await controllerClient('zonal-pv-upgrade', cp) }),
        );
      }
      const real = await startRealProvisioner(cp);
      driver = real.driver;
      processes.push(real.provisioner);
    } catch (err) {
      // Nothing of a side that did not start is left running.
      for (const l of loops) await l.stop().catch(() => undefined);
      for (const p of processes) await p.stop().catch(() => undefined);
      await cp.stop().catch(() => undefined);
      throw err;
    }
    const cluster = new DiffCluster(side, cp, admin, processes, loops, metricsPort, driver);
    cluster.poller = cluster.poll();
    await cluster.binderReady();
    return cluster;
  }

  /** A new volume turns Available once this side's binder runs. */
  private async binderReady(): Promise<void> {
    const name = 'diff-ready-probe';
    await this.admin.create<PersistentVolume>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: { capacity: { storage: '1Mi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'diff-ready-probe', csi: { driver: 'diff.csi.topovol.dev', volumeHandle: name } },
    });
    await eventually(async () => {
      const v = await this.admin.get<PersistentVolume>(Resources.persistentVolumes, name);
      if (v.status?.phase !== 'Available') throw new Error(`${this.side}: the binder has not made ${name} Available`);
    }, 120_000);
  }

  private async poll(): Promise<void> {
    while (this.polling) {
      try {
        const [claims, volumes, pods, events] = await Promise.all([
          this.admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims),
          this.admin.list<PersistentVolume>(Resources.persistentVolumes),
          this.admin.list<Pod>(Resources.pods),
          this.admin.list<Event>(Resources.events),
        ]);
        this.latest = { claims: claims.items, volumes: volumes.items, pods: pods.items, events: events.items };
        this.generation++;
        for (const w of this.waiters.splice(0)) w();
      } catch {
        // The next round will do.
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }

  /** The latest view, once one newer than now has been taken. */
  async freshView(timeoutMs = 60_000): Promise<ClusterView> {
    const want = this.generation + 1;
    const deadline = Date.now() + timeoutMs;
    while (this.generation < want) {
      if (Date.now() > deadline) throw new Error(`${this.side}: no fresh list for ${timeoutMs} ms (its lists keep failing)`);
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((r) => {
        this.waiters.push(r);
        timer = setTimeout(r, 1_000);
      });
      clearTimeout(timer);
    }
    return this.latest;
  }

  /**
   * This side's binder's metrics: kube-controller-manager's /metrics, or this process's registry,
   * whose collector gauges report the binder set up last (this side's).
   */
  async metricsText(): Promise<string> {
    return this.metricsPort !== undefined ? scrapeKubeControllerManager(this.metricsPort) : metricsRegistry.metrics();
  }

  /** Whether external-provisioner asked this side's driver for a volume for the claim of this uid. */
  volumeAskedFor(claimUid: string): boolean {
    return (this.driver?.createVolumeRequests() ?? []).some((r) => r.name === `pvc-${claimUid}`);
  }

  get logDir(): string {
    return this.cp.dir;
  }

  async stop(): Promise<void> {
    this.polling = false;
    for (const w of this.waiters.splice(0)) w();
    await this.poller;
    for (const l of this.loops) await l.stop();
    for (const p of this.processes) await p.stop();
    await this.driver?.stop();
    await this.cp.stop();
  }
}

/**
 * external-provisioner (central, no leader election) for REAL_PROVISIONER, with the test driver
 * on a socket of the control plane's directory: no topology (the driver does not offer it), room
 * for every scenario's volumes. Resolves once it has asked the driver what it can do.
 */
async function startRealProvisioner(cp: ControlPlane): Promise<{ driver: CsiTestDriver; provisioner: ManagedProcess }> {
  const { 'csi-provisioner': binary } = await csiBinaries(['csi-provisioner']);
  const driver = new CsiTestDriver({ name: REAL_PROVISIONER, pluginCapabilities: ['CONTROLLER_SERVICE'], controllerCapabilities: ['CREATE_DELETE_VOLUME'], capacity: [{ segment: {}, capacity: 1024n * GiB }] });
  const socket = path.join(cp.dir, 'real-csi.sock');
  await driver.start(`unix://${socket}`);
  const provisioner = new ManagedProcess({
    name: 'csi-provisioner',
    command: binary,
    logFile: path.join(cp.dir, 'csi-provisioner.log'),
    args: [`--csi-address=unix://${socket}`, `--kubeconfig=${cp.kubeconfigPath}`, '--leader-election=false', '--retry-interval-start=500ms', '--retry-interval-max=5s', '--v=3'],
  });
  try {
    await eventually(() => {
      if (!provisioner.running) throw new Error(`csi-provisioner exited:\n${provisioner.logTail(20)}`);
      if (driver.calls('ControllerGetCapabilities') < 1) throw new Error('csi-provisioner has not asked the driver yet');
    }, 120_000, 100);
  } catch (err) {
    await provisioner.stop();
    await driver.stop();
    throw err;
  }
  return { driver, provisioner };
}
