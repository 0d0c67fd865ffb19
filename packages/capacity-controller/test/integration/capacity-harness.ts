import { capacityDescriptor } from '../../src/capacity-descriptor.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient, Node } from '@topovol/shared';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import type { CsiTestDriverOptions } from '@topovol/testing/csi-test-driver';
import { bindNamespacedRules, csiBinaries, deleteNow, InProcessLoop, INSTALL_NAMESPACE, installGeneratedRbac, ManagedProcess, perNodeProvisionerArgs, sharedControlPlane, throwawayIdentity } from '@topovol/testing';
import type { InProcessLoopOptions, ThrowawayIdentity } from '@topovol/testing';

/** A capacity loop in this process against the real API server, as the manager would run it. */
export type RunningCapacity = InProcessLoop;
export const RunningCapacity = {
  /** `bind: false`: leave the namespaced rules unbound in --capacity-namespace (the operator who forgot). */
  start: async (args: string[] = [], opts?: InProcessLoopOptions, { bind = true }: { bind?: boolean } = {}): Promise<InProcessLoop> => {
    const ns = args.find((a) => a.startsWith(NAMESPACE_FLAG))?.slice(NAMESPACE_FLAG.length);
    if (ns && bind) await bindCapacityRules(ns);
    return InProcessLoop.start(capacityDescriptor, ['--concurrent-workers=4', '--capacity-ownerref-level=-1', ...args], opts);
  },
};

const NAMESPACE_FLAG = '--capacity-namespace=';

/** What the capacity loop's namespaced rules allow, asked of RBAC before a test relies on a binding. */
const WRITE_PROBE = { group: 'storage.k8s.io', resource: 'csistoragecapacities', verb: 'create' };

/**
 * The capacity loop's namespaced rules (its CSIStorageCapacity writes, its pod and owners) bound to
 * its ServiceAccount in a test's namespace, as docs/install.md asks of an operator who sets
 * --capacity-namespace to another namespace than the install one.
 */
export function bindCapacityRules(namespace: string): Promise<void> {
  return bindNamespacedRules('capacity', namespace, WRITE_PROBE);
}

/**
 * A ServiceAccount with the capacity loop's bindings as installed (its ClusterRole; its namespaced
 * role in the install namespace only), under a name of its own: tests that provoke refusals use it,
 * since the end-of-run RBAC check requires the loop's own ServiceAccount never refused.
 * `bindNamespaced(ns)` is the operator's RoleBinding in another namespace.
 */
export async function installedCapacityIdentity(): Promise<ThrowawayIdentity & { bindNamespaced: (namespace: string) => Promise<void> }> {
  await installGeneratedRbac();
  const id = await throwawayIdentity('capacity-installed', ['topovol-capacity'], { group: 'storage.k8s.io', resource: 'csistoragecapacities', verb: 'list' });
  const bindNamespaced = (namespace: string): Promise<void> => id.bindIn(namespace, 'topovol-capacity-namespaced', WRITE_PROBE);
  await bindNamespaced(INSTALL_NAMESPACE);
  return { ...id, bindNamespaced };
}

/** The project's CSI test driver on a fresh unix socket. */
export async function startDriver(opts: CsiTestDriverOptions): Promise<{ driver: CsiTestDriver; socket: string; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'topovol-capacity-'));
  const socket = join(dir, 'csi.sock');
  const driver = new CsiTestDriver({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'GET_CAPACITY'], ...opts });
  await driver.start(`unix://${socket}`);
  return {
    driver,
    socket,
    cleanup: async () => {
      await driver.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function createNode(client: KubeClient, name: string, labels: Record<string, string>): Promise<void> {
  await client.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
}

export { registerDriverOnNode } from '@topovol/testing';

export interface CapacityView {
  storageClassName: string;
  segment: Record<string, string>;
  pool?: string;
  capacity?: string;
  maximumVolumeSize?: string;
}

/** Our objects in a namespace, reduced to what they say, sorted. */
export async function capacityObjects(client: KubeClient, ns: string): Promise<CapacityView[]> {
  const list = await client.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns });
  return list.items
    .map((o) => ({
      storageClassName: o.storageClassName,
      segment: { ...(o.nodeTopology?.matchLabels ?? {}) },
      ...(o.metadata?.labels?.['capacity.topovol.io/pool'] ? { pool: o.metadata.labels['capacity.topovol.io/pool'] } : {}),
      ...(o.capacity !== undefined ? { capacity: String(o.capacity) } : {}),
      ...(o.maximumVolumeSize !== undefined ? { maximumVolumeSize: String(o.maximumVolumeSize) } : {}),
    }))
    .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

export async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
  return all.find((m) => m.name === name)?.values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value ?? 0;
}

/**
 * Deletes a PV the way it goes away in a cluster: the API server's StorageObjectInUseProtection
 * admission adds the pv-protection finalizer, which kube-controller-manager (not running here)
 * would remove once the volume is unused, so the test removes it.
 */
export async function deleteVolume(client: KubeClient, name: string): Promise<void> {
  await deleteNow(client, Resources.persistentVolumes, name, undefined, { quiet: true });
}

/**
 * The real external-provisioner v6.3.0 with --enable-capacity (polls every second, objects owned by
 * nobody) for the driver at `endpoint`, on the shared control plane, publishing into `namespace`
 * ($NAMESPACE, as a Deployment's downward API sets it): central, or with `node` per node
 * (--node-deployment, NODE_NAME). A cold build of csi-provisioner takes minutes; cached afterwards.
 */
export async function startCapacityProvisioner(endpoint: string, namespace: string, node?: string): Promise<ManagedProcess> {
  const { 'csi-provisioner': binary } = await csiBinaries(['csi-provisioner']);
  const { kubeconfigPath: kubeconfig } = await sharedControlPlane();
  return new ManagedProcess({
    name: 'csi-provisioner',
    command: binary,
    args: node
      ? perNodeProvisionerArgs({ socket: endpoint, kubeconfig, capacityPollInterval: '1s' })
      : [`--csi-address=${endpoint}`, `--kubeconfig=${kubeconfig}`, '--leader-election=false', '--enable-capacity=true', '--capacity-poll-interval=1s', '--capacity-ownerref-level=-1', '--v=3'],
    logFile: join(mkdtempSync(join(tmpdir(), 'topovol-csi-provisioner-')), 'csi-provisioner.log'),
    env: { ...process.env, NAMESPACE: namespace, ...(node ? { NODE_NAME: node } : {}) },
  });
}
