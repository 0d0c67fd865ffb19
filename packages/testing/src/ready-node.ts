import type { KubeClient } from '@topovol/shared';
import { retryOnConflict } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { CSINode, Node } from '@topovol/shared';
import { LABEL_HOSTNAME } from '@topovol/shared';

/**
 * A Node the real kube-scheduler will use: Ready, with allocatable resources, and without the
 * not-ready taint that the TaintNodesByCondition admission plugin puts on every new Node (no node
 * lifecycle controller runs in the test control plane to lift it).
 */
export async function createReadyNode(admin: KubeClient, name: string, labels: Record<string, string> = {}): Promise<void> {
  await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { [LABEL_HOSTNAME]: name, ...labels } } });
  await retryOnConflict(async () => {
    const n = await admin.get<Node>(Resources.nodes, name);
    n.spec = { ...n.spec, taints: [] };
    await admin.replace(Resources.nodes, n);
  });
  await retryOnConflict(async () => {
    const n = await admin.get<Node>(Resources.nodes, name);
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const resources = { cpu: '4', memory: '8Gi', pods: '110' };
    n.status = {
      capacity: resources,
      allocatable: resources,
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated by the test', lastHeartbeatTime: now, lastTransitionTime: now }],
    };
    await admin.replaceStatus(Resources.nodes, n);
  });
}

/** What kubelet writes when the driver's node plugin registers: the driver and its topology keys. */
export async function registerDriverOnNode(client: KubeClient, node: string, driver: string, topologyKeys: string[]): Promise<void> {
  await client.create<CSINode>(Resources.csiNodes, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: node }, spec: { drivers: [{ name: driver, nodeID: node, topologyKeys }] } });
}
