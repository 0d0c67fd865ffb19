import { metricsRegistry, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { ControlPlane, controllerClient, eventually, freePort, InProcessLoop, scrapeKubeControllerManager, startKubeControllerManager, startKubeScheduler } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
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
  ) {}

  static async start(side: SideName): Promise<DiffCluster> {
    const cp = new ControlPlane({ apiServerFlags: ['--disable-admission-plugins=DefaultStorageClass'] });
    await cp.start();
    const admin = cp.adminClient();
    const controllers = side === 'upstream' ? ['persistentvolume-binder-controller', ...PROTECTION] : PROTECTION;
    const metricsPort = side === 'upstream' ? await freePort() : undefined;
    const processes = [await startKubeControllerManager(cp, controllers, [`--pvclaimbinder-sync-period=${SYNC_PERIOD_S}s`], { metricsPort }), await startKubeScheduler(cp)];
    const loops =
      side === 'topovol'
        ? [
            await InProcessLoop.start(pvBinderDescriptor, [`--pvclaimbinder-sync-period=${SYNC_PERIOD_S}s`, `--stale-selected-node-grace=${TOPOVOL_GRACE_S}s`, '--concurrent-pv-binder-syncs=4'], {
              client: await controllerClient('pv-binder', cp),
            }),
            await InProcessLoop.start(zonalPvUpgradeDescriptor, [], { client: await controllerClient('zonal-pv-upgrade', cp) }),
          ]
        : [];
    const cluster = new DiffCluster(side, cp, admin, processes, loops, metricsPort);
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
  async freshView(): Promise<ClusterView> {
    const want = this.generation + 1;
    while (this.generation < want) await new Promise<void>((r) => this.waiters.push(r));
    return this.latest;
  }

  /**
   * This side's binder's metrics: kube-controller-manager's /metrics, or this process's registry,
   * whose collector gauges report the binder set up last (this side's).
   */
  async metricsText(): Promise<string> {
    return this.metricsPort !== undefined ? scrapeKubeControllerManager(this.metricsPort) : metricsRegistry.metrics();
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
    await this.cp.stop();
  }
}
