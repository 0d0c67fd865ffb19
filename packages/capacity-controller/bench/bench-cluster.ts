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

/** A fresh control plane with what every capacity bench's contenders run against, nodes aside. */
export interface BenchControlPlane {
  cp: ControlPlane;
  admin: KubeClient;
  /** The processes' logs and the drivers' sockets. */
  dir: string;
  classes: string[];
  provisioner: BenchIdentity;
  topovol: BenchIdentity;
  /** Stops what was added last first (see addTeardown), then the cluster. */
  stop(): Promise<void>;
  addTeardown(t: () => Promise<void>): void;
}

export interface BenchCluster extends BenchControlPlane {
  nodes: BenchNode[];
  kcm: ManagedProcess;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * A fresh etcd + kube-apiserver with Topovol's CRDs (the aggregated status), the claims'
 * namespace, the CSIDriver (storageCapacity: true), the StorageClasses and both contenders'
 * identities. Torn down by stop(), also when this fails half-way.
 */
export async function startBenchControlPlane(label: string, classes: readonly StorageClass[]): Promise<BenchControlPlane> {
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
    for (const c of classes) await admin.create<StorageClass>(Resources.storageClasses, c);
    // Installs the install namespace and the generated RBAC, then each contender's identity.
    const topovol = await topovolIdentity(cp, admin);
    const provisioner = await provisionerIdentity(cp, admin);
    return { cp, admin, dir, classes: classes.map((c) => c.metadata!.name!), provisioner, topovol, stop, addTeardown: (t) => teardown.push(t) };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The per-node bench's cluster: the control plane above, per node a Node, a CSINode and its own
 * driver instance, and kube-controller-manager with the PV binder and the PV/PVC protection
 * controllers, so claims bind and released volumes are deleted as in a cluster.
 */
export async function startBenchCluster(label: string, nodeCount: number, classCount: number, layout: PoolLayout): Promise<BenchCluster> {
  const base = await startBenchControlPlane(
    label,
    Array.from({ length: classCount }, (_, j) => storageClass(layout, className(j))),
  );
  try {
    say(`${label}: ${nodeCount} nodes, each with a CSINode and its own CSI driver instance`);
    const nodes: BenchNode[] = [];
    base.addTeardown(async () => {
      for (const n of nodes) await n.driver.stop();
    });
    for (let i = 0; i < nodeCount; i++) nodes.push(await startBenchNode(base.admin, nodeName(i), base.dir, layout, base.classes));
    const kcm = await startKubeControllerManager(base.cp, ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller']);
    base.addTeardown(() => kcm.stop());
    return { ...base, nodes, kcm };
  } catch (err) {
    await base.stop();
    throw err;
  }
}
