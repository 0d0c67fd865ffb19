import path from 'node:path';
import type { KubeClient } from '@topovol/shared';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { createReadyNode, registerDriverOnNode } from '@topovol/testing';
import { DRIVER, INITIAL_BYTES, poolOf, segmentOf, TOPOLOGY_KEY } from './bench-objects.js';
import type { PoolLayout } from './bench-objects.js';

/** One node with node-local storage: its Node and CSINode, and its own instance of the test driver. */
export interface BenchNode {
  name: string;
  segment: Record<string, string>;
  driver: CsiTestDriver;
  /** The driver's unix socket, for the node's external-provisioner and Topovol instance. */
  socket: string;
  /**
   * Set by a change before it happens: called synchronously right after the driver's free space
   * changes (CreateVolume, DeleteVolume, setCapacity), with Date.now(). That instant is t0.
   */
  onCapacityChange?: (at: number) => void;
}

/**
 * Wraps the driver's capacity bookkeeping so the bench knows to the millisecond when the driver
 * starts answering GetCapacity with a new figure, whoever changed it: the change's t0, the same
 * for both contenders. The driver runs in this process, so no clock skew enters.
 */
function observeCapacity(n: BenchNode): void {
  const model = n.driver.capacity;
  const notify = (): void => {
    const cb = n.onCapacityChange;
    n.onCapacityChange = undefined;
    cb?.(Date.now());
  };
  const reserve = model.reserve.bind(model);
  model.reserve = (...args) => {
    const entry = reserve(...args);
    if (entry) notify();
    return entry;
  };
  const release = model.release.bind(model);
  model.release = (...args) => {
    release(...args);
    notify();
  };
  const set = model.set.bind(model);
  model.set = (...args) => {
    set(...args);
    notify();
  };
}

/** Registers the node (Node, CSINode as kubelet writes it) and starts its driver with every class's pool full. */
export async function startBenchNode(admin: KubeClient, name: string, dir: string, layout: PoolLayout, classes: readonly string[]): Promise<BenchNode> {
  const segment = segmentOf(name);
  await createReadyNode(admin, name, segment);
  await registerDriverOnNode(admin, name, DRIVER, [TOPOLOGY_KEY]);
  const pools = [...new Set(classes.map((c) => poolOf(layout, c)))];
  const driver = new CsiTestDriver({
    name: DRIVER,
    node: { nodeId: name, accessibleTopology: segment },
    capacity: pools.map((pool) => ({ segment, capacity: INITIAL_BYTES, pool })),
  });
  const socket = path.join(dir, `${name}.sock`);
  await driver.start(socket);
  const n: BenchNode = { name, segment, driver, socket };
  observeCapacity(n);
  return n;
}
