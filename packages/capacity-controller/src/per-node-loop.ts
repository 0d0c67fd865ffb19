import { Controller } from '@topovol/shared';
import type { ControllerEnv, KubeClient } from '@topovol/shared';
import type { CapacityFlags } from './capacity-flags.js';
import { bytesToQuantity } from './objects/quantity-bytes.js';
import type { CapacitySource } from './source/get-capacity.js';
import { runPerNodeWriter } from './status/index.js';

export const NODE_FIELD_MANAGER_PREFIX = 'topovol-capacity/';

export interface PerNodeDeps {
  env: ControllerEnv;
  flags: CapacityFlags;
  driverName: string;
  source: CapacitySource;
  writeClient: KubeClient;
}

/**
 * Per-node mode (seed 000 "Only inline ephemeral volumes"): this instance owns one pool entry,
 * `{name: <node>, nodeList: [<node>]}`, and asks the driver with an empty GetCapacity request, as
 * the seed says. Every node runs one (a DaemonSet), so run it with --leader-elect=false: the
 * instances do not compete, and server-side apply under per-node field managers keeps them apart.
 * The runner is a Controller with one key whose reconcile is the writer's whole lifetime.
 */
export function setupPerNode(deps: PerNodeDeps): Controller {
  const { env, flags, driverName, source, writeClient } = deps;
  const abort = new AbortController();
  const controller: Controller = new Controller('capacity-node', async (ctx) => {
    ctx.signal.addEventListener('abort', () => abort.abort(), { once: true });
    await runPerNodeWriter({
      client: writeClient,
      driverName,
      nodeName: flags.nodeName,
      refreshMs: flags.pollIntervalMs,
      expiryMs: flags.expiryMs,
      signal: abort.signal,
      capacity: async () => {
        const m = await source.get({}, {}, abort.signal);
        return { capacity: bytesToQuantity(m.available), ...(m.maximumVolumeSize !== undefined ? { maximumVolumeSize: bytesToQuantity(m.maximumVolumeSize) } : {}) };
      },
    });
  });
  // The queue is drained on shutdown; stop the writer then too.
  const shutdown = controller.shutdown.bind(controller);
  controller.shutdown = async (timeoutMs: number): Promise<boolean> => {
    abort.abort();
    return shutdown(timeoutMs);
  };
  controller.enqueue('node');
  env.log.info('per-node capacity writer set up', { driver: driverName, node: flags.nodeName });
  return controller;
}
