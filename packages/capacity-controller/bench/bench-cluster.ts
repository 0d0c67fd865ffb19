import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient, KubeObject, StorageClass } from '@topovol/shared';
import { ControlPlane, installCrds, startKubeControllerManager } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { CLAIM_NAMESPACE, className, DRIVER, nodeName, storageClass } from './bench-objects.js';
import type { PoolLayout } from './bench-objects.js';
import { provisionerIdentity, topovolIdentity } from './identities.js';
import type { BenchIdentity } from './identities.js';
import { startBenchNode } from './node-drivers.js';
import type { BenchNode } from './node-drivers.js';

export interface BenchCluster {
  cp: ControlPlane;
  admin: KubeClient;
  /** The processes' logs and the drivers' sockets. */
  dir: string;
  nodes: BenchNode[];
  classes: string[];
  provisioner: BenchIdentity;
  topovol: BenchIdentity;
  kcm: ManagedProcess;
  /** Stops what the contender added first (see addTeardown), then the cluster. */
  stop(): Promise<void>;
  addTeardown(t: () => Promise<void>): void;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * A fresh etcd + kube-apiserver with what both contenders run against: Topovol's CRDs (the
 * aggregated status), the CSIDriver (storageCapacity: true), the StorageClasses, and per node a
 * Node, a CSINode and a driver instance; kube-controller-manager with the PV binder and the PV/PVC
 * protection controllers, so claims bind and released volumes are deleted as in a cluster.
 */
export async function startBenchCluster(label: string, nodeCount: number, classCount: number, layout: PoolLayout): Promise<BenchCluster> {
  const teardown: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const t of teardown.splice(0).reverse()) await t().catch((err: unknown) => say(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  };
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), `topovol-bench-capacity-${label}-`));
    teardown.push(() => Promise.resolve(process.env.TOPOVOL_KEEP_TEST_DIRS ? undefined : rmSync(dir, { recursive: true, force: true })));
    const cp = new ControlPlane();
    say(`${label}: starting etcd + kube-apiserver in ${cp.dir}`);
    teardown.push(() => cp.stop());
    await cp.start();
    const admin = cp.adminClient();
    teardown.push(() => Promise.resolve(admin.close()));
    await installCrds(admin);
    await admin.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CLAIM_NAMESPACE } });
    // attachRequired false: node-local volumes are not attached (no VolumeAttachments).
    await admin.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DRIVER }, spec: { attachRequired: false, storageCapacity: true } });
    const classes = Array.from({ length: classCount }, (_, j) => className(j));
    for (const c of classes) await admin.create<StorageClass>(Resources.storageClasses, storageClass(layout, c));
    // Installs the install namespace and the generated RBAC, then each contender's identity.
    const topovol = await topovolIdentity(cp, admin);
    const provisioner = await provisionerIdentity(cp, admin);

    say(`${label}: ${nodeCount} nodes, each with a CSINode and its own CSI driver instance`);
    const nodes: BenchNode[] = [];
    teardown.push(async () => {
      for (const n of nodes) await n.driver.stop();
    });
    for (let i = 0; i < nodeCount; i++) nodes.push(await startBenchNode(admin, nodeName(i), dir, layout, classes));

    const kcm = await startKubeControllerManager(cp, ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller']);
    teardown.push(() => kcm.stop());
    return {
      cp,
      admin,
      dir,
      nodes,
      classes,
      provisioner,
      topovol,
      kcm,
      stop,
      addTeardown: (t) => teardown.push(t),
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
