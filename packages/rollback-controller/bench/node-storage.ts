import path from 'node:path';
import type { KubeClient } from '@topovol/shared';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import type { ControlPlane } from '@topovol/testing';
import { createReadyNode, eventually, ManagedProcess, perNodeProvisionerArgs, registerDriverOnNode } from '@topovol/testing';
import { CAPACITY_NAMESPACE, DRIVER, TOPOLOGY_KEY } from './story-objects.js';

/** One node with node-local storage: its Node and CSINode, its own driver and its own external-provisioner. */
export interface NodeStorage {
  name: string;
  segment: Record<string, string>;
  driver: CsiTestDriver;
  provisioner: ManagedProcess;
}

/** Registers the node and starts its driver and provisioner; resolves once the provisioner has asked the driver who it is. */
export async function startNodeStorage(cp: ControlPlane, admin: KubeClient, name: string, dir: string, binary: string): Promise<NodeStorage> {
  const segment = { [TOPOLOGY_KEY]: name };
  await createReadyNode(admin, name, segment);
  await registerDriverOnNode(admin, name, DRIVER, [TOPOLOGY_KEY]);
  // Capacity is set per story; the driver knows only its own node's segment.
  const driver = new CsiTestDriver({ name: DRIVER, node: { nodeId: name, accessibleTopology: segment }, capacity: [{ segment, capacity: 0n }] });
  const socket = path.join(dir, `${name}.sock`);
  await driver.start(socket);
  const provisioner = new ManagedProcess({
    name: `csi-provisioner-${name}`,
    command: binary,
    // The story needs node a's published capacity to stay stale until the scheduler has chosen;
    // the periodic poll is what would correct it. Refreshes right after each CreateVolume and
    // DeleteVolume (external-provisioner does those itself) are unaffected.
    args: perNodeProvisionerArgs({ socket, kubeconfig: cp.kubeconfigPath, capacityPollInterval: '1h', verbosity: 5 }),
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
