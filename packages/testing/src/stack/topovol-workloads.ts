import path from 'node:path';
import type { KubeClient } from '@topovol/shared';
import { isAlreadyExists } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { ResourceType } from '@topovol/shared';
import { INSTALL_NAMESPACE } from '@topovol/manifests';
import type { ControlPlane } from '../control-plane.js';
import { loadManifests } from '../load-manifests.js';
import { startManagerBinary } from '../manager-binary.js';
import type { ManagedProcess } from '../managed-process.js';
import { workloadArgsOnTestMachine, workloadFromFile } from '../manager-workload.js';
import { repoRoot } from '../repo-root.js';
import { readFileSync } from 'node:fs';
import type { StackNode } from './stack-node.js';

/** Topovol's loops as config/manager deploys them: one workload each, capacity one per node. */
export type TopovolLoop = 'pv-binder' | 'zonal-pv-upgrade' | 'rollback' | 'capacity';
export const TOPOVOL_LOOPS: readonly TopovolLoop[] = ['pv-binder', 'zonal-pv-upgrade', 'rollback', 'capacity'];

const CENTRAL_WORKLOADS: Record<Exclude<TopovolLoop, 'capacity'>, string> = {
  'pv-binder': 'config/manager/pv-binder.yaml',
  'zonal-pv-upgrade': 'config/manager/zonal-pv-upgrade/deployment.yaml',
  rollback: 'config/manager/rollback/deployment.yaml',
};
const PER_NODE_WORKLOAD = 'config/manager/capacity-per-node/daemonset.yaml';
const DAEMON_SETS: ResourceType = { group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet', namespaced: true };

/**
 * A central loop (pv-binder, zonal-pv-upgrade or rollback): the real manager binary with its
 * config/manager Deployment's exact args (leader election on), authenticated as the workload's
 * ServiceAccount with a token of its own and only the generated RBAC, as in a cluster. Resolves once
 * /readyz answers (caches synced, leadership healthy).
 */
export async function startCentralLoop(cp: ControlPlane, loop: Exclude<TopovolLoop, 'capacity'>, dir: string, metricsAddress?: string): Promise<ManagedProcess> {
  const w = workloadFromFile(path.join(repoRoot(), CENTRAL_WORKLOADS[loop]));
  const env = { NAMESPACE: INSTALL_NAMESPACE, POD_NAME: `${w.name}-0` };
  const kubeconfig = await cp.writeServiceAccountKubeconfig(INSTALL_NAMESPACE, w.serviceAccountName, path.join(dir, `${w.name}.kubeconfig`));
  return startManagerBinary({
    name: w.name,
    kubeconfig,
    args: workloadArgsOnTestMachine(w, env),
    logFile: path.join(dir, `${w.name}.log`),
    env: { ...process.env, ...env },
    ...(metricsAddress ? { metricsAddress } : {}),
  });
}

/**
 * The capacity loop next to one node's driver, as config/manager's per-node DaemonSet runs it
 * (--capacity-node-name=$(NODE_NAME), owner level 0): its pod object exists, bound to the node and
 * owned by the DaemonSet object (no kubelet or DaemonSet controller runs here), so its
 * CSIStorageCapacity objects are owned as in a cluster.
 */
export async function startPerNodeCapacity(cp: ControlPlane, admin: KubeClient, node: StackNode, dir: string, extraArgs: readonly string[] = [], metricsAddress?: string): Promise<ManagedProcess> {
  const file = path.join(repoRoot(), PER_NODE_WORKLOAD);
  const w = workloadFromFile(file);
  node.capacityPod = await daemonSetPod(admin, file, node.name);
  const env = { NAMESPACE: INSTALL_NAMESPACE, POD_NAME: node.capacityPod, NODE_NAME: node.name };
  const kubeconfig = await cp.writeServiceAccountKubeconfig(INSTALL_NAMESPACE, w.serviceAccountName, path.join(dir, `${w.name}-${node.name}.kubeconfig`));
  return startManagerBinary({
    name: `${w.name}-${node.name}`,
    kubeconfig,
    args: [...workloadArgsOnTestMachine(w, env, node.driver.endpoint), ...extraArgs],
    logFile: path.join(dir, `${w.name}-${node.name}.log`),
    env: { ...process.env, ...env },
    ...(metricsAddress ? { metricsAddress } : {}),
  });
}

interface DaemonSet extends KubeObject {
  spec: { template: { metadata?: { labels?: Record<string, string> }; spec: { nodeName?: string } } };
}

/** The DaemonSet object of the file (created once) and its pod for `node`; returns the pod's name. */
async function daemonSetPod(admin: KubeClient, file: string, node: string): Promise<string> {
  const ds = loadManifests(readFileSync(file, 'utf8')).find((d) => d.kind === 'DaemonSet') as DaemonSet | undefined;
  if (!ds?.metadata?.name) throw new Error(`${file}: no DaemonSet`);
  const ns = ds.metadata.namespace ?? INSTALL_NAMESPACE;
  try {
    await admin.create<KubeObject>(DAEMON_SETS, ds);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const owner = await admin.get<KubeObject>(DAEMON_SETS, ds.metadata.name, ns);
  const pod = await admin.create<KubeObject>(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${ds.metadata.name}-${node}`,
      namespace: ns,
      labels: ds.spec.template.metadata?.labels,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: ds.metadata.name, uid: owner.metadata?.uid ?? '', controller: true }],
    },
    spec: { ...ds.spec.template.spec, nodeName: node },
  } as KubeObject);
  return pod.metadata?.name ?? '';
}
