import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { CSINode, KubeClient } from '@topovol/shared';
import { CsiTestDriver } from '@topovol/shared/csi-test-driver';
import type { ControlPlane } from '@topovol/shared/testing';
import { createReadyNode, eventually, ManagedProcess } from '@topovol/shared/testing';
import { CAPACITY_NAMESPACE, DRIVER, TOPOLOGY_KEY } from './story-objects.js';

/** One node with node-local storage: its Node and CSINode, its own driver and its own external-provisioner. */
export interface NodeStorage {
  name: string;
  segment: Record<string, string>;
  driver: CsiTestDriver;
  provisioner: ManagedProcess;
}

/**
 * external-provisioner as a per-node deployment (as csi-driver-host-path or TopoLVM deploy it):
 * it provisions only claims whose selected node is NODE_NAME, passes only that node's topology
 * (strict), never takes Immediate claims, and publishes its node's capacity.
 */
export function provisionerArgs(socket: string, kubeconfig: string): string[] {
  return [
    `--csi-address=${socket}`,
    `--kubeconfig=${kubeconfig}`,
    '--leader-election=false',
    '--node-deployment=true',
    '--node-deployment-immediate-binding=false',
    '--strict-topology=true',
    '--immediate-topology=false',
    '--enable-capacity=true',
    // No owning Deployment or DaemonSet here.
    '--capacity-ownerref-level=-1',
    // The story needs node a's published capacity to stay stale until the scheduler has chosen;
    // the periodic poll is what would correct it. Refreshes right after each CreateVolume and
    // DeleteVolume (external-provisioner does those itself) are unaffected.
    '--capacity-poll-interval=1h',
    '--v=5',
  ];
}

/** Registers the node and starts its driver and provisioner; resolves once the provisioner has asked the driver who it is. */
export async function startNodeStorage(cp: ControlPlane, admin: KubeClient, name: string, dir: string, binary: string): Promise<NodeStorage> {
  const segment = { [TOPOLOGY_KEY]: name };
  await createReadyNode(admin, name, segment);
  // What the kubelet writes when the node plugin registers.
  await admin.create<CSINode>(Resources.csiNodes, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSINode',
    metadata: { name },
    spec: { drivers: [{ name: DRIVER, nodeID: name, topologyKeys: [TOPOLOGY_KEY] }] },
  });
  // Capacity is set per story; the driver knows only its own node's segment.
  const driver = new CsiTestDriver({ name: DRIVER, node: { nodeId: name, accessibleTopology: segment }, capacity: [{ segment, capacity: 0n }] });
  const socket = path.join(dir, `${name}.sock`);
  await driver.start(socket);
  const provisioner = new ManagedProcess({
    name: `csi-provisioner-${name}`,
    command: binary,
    args: provisionerArgs(socket, cp.kubeconfigPath),
    logFile: path.join(dir, `csi-provisioner-${name}.log`),
    env: { ...process.env, NODE_NAME: name, NAMESPACE: CAPACITY_NAMESPACE },
  });
  try {
    await eventually(
      () => {
        if (!provisioner.running) throw new Error('exited');
        if (driver.calls('NodeGetInfo') < 1 || driver.calls('ControllerGetCapabilities') < 1) throw new Error('has not asked the driver yet');
        return Promise.resolve();
      },
      60_000,
      100,
    );
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    await provisioner.stop();
    await driver.stop();
    throw new Error(`csi-provisioner for ${name} did not start (${why}):\n${provisioner.logTail(40)}`);
  }
  return { name, segment, driver, provisioner };
}
