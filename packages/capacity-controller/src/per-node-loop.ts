import type { ControllerEnv, KubeClient, Runnable } from '@topovol/shared';
import type { CapacityFlags } from './capacity-flags.js';
import { formatBytes, runnableFunc } from '@topovol/shared';
import type { CapacitySource } from './source/get-capacity.js';
import { runPerNodeWriter } from './status/index.js';

export const NODE_FIELD_MANAGER_PREFIX = 'topovol-capacity/';
/** The per-node status writer's runnable, in logs. */
export const NODE_STATUS_RUNNABLE = 'capacity-node-status';

export interface PerNodeDeps {
  env: ControllerEnv;
  flags: CapacityFlags;
  driverName: string;
  source: CapacitySource;
  writeClient: KubeClient;
  /** The clock expiry times are taken on (the API server's). */
  now: () => number;
}

/**
 * The per-node instance's share of the aggregated status: one `<ephemeral>` pool entry,
 * `{name: <node>, nodeList: [<node>]}` in the shard its node name hashes to, asked of the driver
 * with an empty GetCapacity request.
 * Every node runs one instance (a DaemonSet, with --leader-elect=false: the instances do not
 * compete), and server-side apply under per-node field managers keeps them apart. Its
 * CSIStorageCapacity objects are the capacity loop's, restricted to the node (CapacityLoop onlyNode).
 * A runnable of its own, on its own timer: it reconciles no key and holds no worker.
 */
export function perNodeStatus(deps: PerNodeDeps): Runnable {
  const { flags, driverName, source, writeClient, now } = deps;
  return runnableFunc(NODE_STATUS_RUNNABLE, (signal) =>
    runPerNodeWriter({
      client: writeClient,
      driverName,
      nodeName: flags.nodeName,
      refreshMs: flags.pollIntervalMs,
      expiryMs: flags.expiryMs,
      shards: flags.statusShards,
      now,
      signal,
      capacity: async () => {
        const m = await source.get({}, {}, signal);
        return { capacity: formatBytes(m.available), ...(m.maximumVolumeSize !== undefined ? { maximumVolumeSize: formatBytes(m.maximumVolumeSize) } : {}) };
      },
    }),
  );
}
