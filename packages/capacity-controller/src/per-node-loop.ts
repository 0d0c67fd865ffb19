import type { ControllerEnv, KubeClient, ReconcileContext } from '@topovol/shared';
import type { CapacityFlags } from './capacity-flags.js';
import { formatBytes } from '@topovol/shared';
import type { CapacitySource } from './source/get-capacity.js';
import { runPerNodeWriter } from './status/index.js';

export const NODE_FIELD_MANAGER_PREFIX = 'topovol-capacity/';
/** The key whose reconcile is the per-node status writer's whole lifetime. */
export const NODE_STATUS_KEY = 'node-status';

export interface PerNodeDeps {
  env: ControllerEnv;
  flags: CapacityFlags;
  driverName: string;
  source: CapacitySource;
  writeClient: KubeClient;
}

export interface PerNodeStatus {
  run(ctx: ReconcileContext): Promise<void>;
  stop(): void;
}

/**
 * The per-node instance's share of the aggregated status: one `<ephemeral>` pool entry,
 * `{name: <node>, nodeList: [<node>]}` in the shard its node name hashes to, asked of the driver
 * with an empty GetCapacity request.
 * Every node runs one instance (a DaemonSet, with --leader-elect=false: the instances do not
 * compete), and server-side apply under per-node field managers keeps them apart. Its
 * CSIStorageCapacity objects are the capacity loop's, restricted to the node (CapacityLoop onlyNode).
 */
export function perNodeStatus(deps: PerNodeDeps): PerNodeStatus {
  const { flags, driverName, source, writeClient } = deps;
  const abort = new AbortController();
  return {
    stop: () => abort.abort(),
    run: async (ctx) => {
      ctx.signal.addEventListener('abort', () => abort.abort(), { once: true });
      await runPerNodeWriter({
        client: writeClient,
        driverName,
        nodeName: flags.nodeName,
        refreshMs: flags.pollIntervalMs,
        expiryMs: flags.expiryMs,
        shards: flags.statusShards,
        signal: abort.signal,
        capacity: async () => {
          const m = await source.get({}, {}, abort.signal);
          return { capacity: formatBytes(m.available), ...(m.maximumVolumeSize !== undefined ? { maximumVolumeSize: formatBytes(m.maximumVolumeSize) } : {}) };
        },
      });
    },
  };
}
