import path from 'node:path';
import type { KubeClient } from '@topovol/shared';
import type { TopologySegment } from '@topovol/shared/csi';
import type { ControlPlane } from '../control-plane.js';
import { CsiTestDriver } from '../csi-test-driver/csi-test-driver.js';
import { eventually } from '../eventually.js';
import { ManagedProcess } from '../managed-process.js';
import { perNodeProvisionerArgs } from '../per-node-provisioner-args.js';
import { createReadyNode, registerDriverOnNode } from '../ready-node.js';

export interface StackNodeSpec {
  name: string;
  /** Node labels besides kubernetes.io/hostname and the driver's topology key (zones, regions). */
  labels?: Record<string, string>;
  /** Free space of the driver's default pool (no `pool` class parameter) on this node. */
  capacity?: bigint;
}

export interface StackNodeContext {
  cp: ControlPlane;
  admin: KubeClient;
  /** Sockets and logs. */
  dir: string;
  driverName: string;
  topologyKey: string;
  provisionerBinary: string;
}

/**
 * One simulated node with node-local storage, as csi-driver-host-path or TopoLVM deploy it: its
 * Node (Ready, untainted) and CSINode (what the kubelet writes once the driver's node plugin
 * registered), the project's CSI test driver serving this node's storage only, and its own
 * external-provisioner in --node-deployment mode (it provisions only claims whose selected node is
 * this node). Topovol's per-node capacity instance is started next to it by the stack.
 */
export class StackNode {
  /** The pod object of Topovol's per-node capacity instance (its $POD_NAME), once started. */
  capacityPod?: string;

  private constructor(
    readonly name: string,
    /** This node's topology segment: {<driver topology key>: <node name>}. */
    readonly segment: TopologySegment,
    readonly driver: CsiTestDriver,
    readonly provisioner: ManagedProcess,
  ) {}

  /** Sets the free space of a pool (the class parameter `pool`; '' is the default) on this node. */
  setCapacity(bytes: bigint, pool = ''): void {
    this.driver.setCapacity(this.segment, bytes, { pool });
  }

  static async start(ctx: StackNodeContext, spec: StackNodeSpec): Promise<StackNode> {
    const segment = { [ctx.topologyKey]: spec.name };
    await createReadyNode(ctx.admin, spec.name, { ...spec.labels, ...segment });
    await registerDriverOnNode(ctx.admin, spec.name, ctx.driverName, [ctx.topologyKey]);
    const driver = new CsiTestDriver({ name: ctx.driverName, node: { nodeId: spec.name, accessibleTopology: segment }, capacity: [{ segment, capacity: spec.capacity ?? 0n }] });
    const socket = path.join(ctx.dir, `${spec.name}.sock`);
    await driver.start(socket);
    const provisioner = new ManagedProcess({
      name: `csi-provisioner-${spec.name}`,
      command: ctx.provisionerBinary,
      // Capacity off: Topovol's per-node capacity instance publishes this node's CSIStorageCapacity.
      args: perNodeProvisionerArgs({ socket, kubeconfig: ctx.cp.kubeconfigPath }),
      logFile: path.join(ctx.dir, `csi-provisioner-${spec.name}.log`),
      env: { ...process.env, NODE_NAME: spec.name },
    });
    try {
      // Started once it has asked its driver who it is (NodeGetInfo) and what it can do.
      await eventually(
        () => {
          if (!provisioner.running) throw new Error('exited');
          if (driver.calls('NodeGetInfo') < 1 || driver.calls('ControllerGetCapabilities') < 1) throw new Error('has not asked the driver yet');
        },
        60_000,
        100,
      );
    } catch (err) {
      await provisioner.stop();
      await driver.stop();
      throw new Error(`csi-provisioner for ${spec.name} did not start (${err instanceof Error ? err.message : String(err)}):\n${provisioner.logTail(40)}`);
    }
    return new StackNode(spec.name, segment, driver, provisioner);
  }

  async stop(): Promise<void> {
    await this.provisioner.stop();
    await this.driver.stop();
  }
}
