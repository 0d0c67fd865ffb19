import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient, KubeObject } from '@topovol/shared';
import { csiBinaries } from '@topovol/testing/csi-test-driver';
import { ControlPlane, installCrds, startKubeControllerManager, startKubeScheduler } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { startNodeStorage } from './node-storage.js';
import type { NodeStorage } from './node-storage.js';
import { CAPACITY_NAMESPACE, DRIVER, NODE_A, NODE_B } from './story-objects.js';
import { startTopovol } from './topovol-manager.js';

export interface BenchCluster {
  cp: ControlPlane;
  admin: KubeClient;
  /** Logs of the bench's own processes and the drivers' sockets. */
  dir: string;
  a: NodeStorage;
  b: NodeStorage;
  scheduler: ManagedProcess;
  kcm: ManagedProcess;
  topovol: ManagedProcess;
  /** Every long-running process, to check between steps that none has died. */
  processes(): ManagedProcess[];
  stop(): Promise<void>;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * Everything the story runs on, on its own fresh etcd + kube-apiserver: kube-scheduler,
 * kube-controller-manager with only the PV/PVC protection controllers (the finalizers a deleted
 * claim and volume wait on), nodes a and b each with a CSI driver and an external-provisioner of
 * their own, and Topovol's pv-binder and rollback loops. Stops what it started if a step fails.
 */
export async function startCluster(managerArgs: readonly string[]): Promise<BenchCluster> {
  const teardown: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const t of teardown.splice(0).reverse()) await t().catch((err: unknown) => say(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  };
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-bench-rollback-'));
    teardown.push(() => Promise.resolve(process.env.TOPOVOL_KEEP_TEST_DIRS ? undefined : rmSync(dir, { recursive: true, force: true })));
    const { 'csi-provisioner': provisionerBinary } = await csiBinaries(['csi-provisioner']);

    const cp = new ControlPlane();
    say(`starting etcd + kube-apiserver in ${cp.dir}`);
    teardown.push(() => cp.stop());
    await cp.start();
    const admin = cp.adminClient();
    teardown.push(() => Promise.resolve(admin.close()));
    // The rollback loop may rely on Topovol's CRDs; installing them all costs nothing.
    await installCrds(admin);
    await admin.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CAPACITY_NAMESPACE } });
    // storageCapacity: the scheduler filters and scores nodes by the published CSIStorageCapacity.
    // attachRequired false: a node-local driver attaches nothing (no VolumeAttachments).
    await admin.create<CSIDriver>(Resources.csiDrivers, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: DRIVER },
      spec: { attachRequired: false, storageCapacity: true },
    });

    const scheduler = await startKubeScheduler(cp);
    teardown.push(() => scheduler.stop());
    const kcm = await startKubeControllerManager(cp, ['persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller']);
    teardown.push(() => kcm.stop());

    const nodes: NodeStorage[] = [];
    for (const name of [NODE_A, NODE_B]) {
      say(`node ${name}: CSI driver and csi-provisioner`);
      const n = await startNodeStorage(cp, admin, name, dir, provisionerBinary);
      teardown.push(async () => {
        await n.provisioner.stop();
        await n.driver.stop();
      });
      nodes.push(n);
    }

    say(['topovol-controller-manager --controllers=pv-binder,rollback', ...managerArgs].join(' '));
    const topovol = await startTopovol(cp, dir, managerArgs);
    teardown.push(() => topovol.stop());

    const [a, b] = nodes as [NodeStorage, NodeStorage];
    return {
      cp,
      admin,
      dir,
      a,
      b,
      scheduler,
      kcm,
      topovol,
      processes: () => [scheduler, kcm, a.provisioner, b.provisioner, topovol],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Throws with the log tail of the first process that is no longer running. */
export function requireAllRunning(c: BenchCluster): void {
  const dead = c.processes().find((p) => !p.running);
  if (dead) throw new Error(`${dead.name} exited; its log (${dead.logFile}):\n${dead.logTail(40)}`);
}
