import { errorMessage, isConflict, isNotFound, logger } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { EPHEMERAL_CLASS } from '../objects/capacity-item.js';
import { CSIDriverCapacities } from './driver-capacity-types.js';
import type { CSIDriverCapacity } from './driver-capacity-types.js';
import { countStatusWrite, ensureDriverCapacity, pruneExpiredPools } from './status-writer.js';

export interface PerNodeWriterOptions {
  client: KubeClient;
  driverName: string;
  nodeName: string;
  refreshMs: number;
  expiryMs: number;
  capacity: () => Promise<{ capacity: string; maximumVolumeSize?: string }>;
  signal: AbortSignal;
  /** Default `<ephemeral>`: seed 000 "Only inline ephemeral volumes". */
  storageClassName?: string;
  /** On a graceful stop, withdraw the entry at once instead of letting it expire (default true). */
  withdrawOnStop?: boolean;
}

export function nodeFieldManager(node: string): string {
  return `topovol-capacity/${node}`;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/**
 * One node's writer: owns exactly the pool `{name: node, nodeList: [node]}` of one storage entry,
 * applied to the status subresource under a field manager of its own. The list-map keys
 * (storageClassName, then name) make every writer's pool a separate entry that only its manager
 * owns; the shared storage entry's key is co-owned with the same value. So 50 writers never
 * conflict and never overwrite each other, and none needs to read first. Expired entries of
 * stopped writers are pruned by whichever writer notices.
 */
export async function runPerNodeWriter(opts: PerNodeWriterOptions): Promise<void> {
  const log = logger().child({ component: 'capacity-node', driver: opts.driverName, node: opts.nodeName });
  const manager = nodeFieldManager(opts.nodeName);
  const storageClassName = opts.storageClassName ?? EPHEMERAL_CLASS;
  const body = (pool: Record<string, unknown> | undefined): CSIDriverCapacity => ({
    apiVersion: `${CSIDriverCapacities.group}/${CSIDriverCapacities.version}`,
    kind: CSIDriverCapacities.kind,
    metadata: { name: opts.driverName },
    status: { storage: [{ storageClassName, ...(pool ? { pools: [pool as never] } : {}) }] },
  });
  while (!opts.signal.aborted) {
    let delay = opts.refreshMs;
    try {
      const c = await opts.capacity();
      const pool = {
        name: opts.nodeName,
        nodeList: [opts.nodeName],
        capacity: c.capacity,
        ...(c.maximumVolumeSize ? { maximumVolumeSize: c.maximumVolumeSize } : {}),
        expiryTime: new Date(Date.now() + opts.expiryMs).toISOString().replace(/\.\d+Z$/, 'Z'),
      };
      try {
        await opts.client.apply(CSIDriverCapacities, body(pool), manager, { subresource: 'status' });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await ensureDriverCapacity(opts.client, opts.driverName, manager, log);
        await opts.client.apply(CSIDriverCapacities, body(pool), manager, { subresource: 'status' });
      }
      countStatusWrite('node', 'ok');
      await pruneExpiredPools(opts.client, opts.driverName, Date.now(), log);
    } catch (err) {
      countStatusWrite('node', isConflict(err) ? 'conflict' : 'error');
      log.warn('capacity of this node not published; retrying', { error: errorMessage(err) });
      delay = Math.min(opts.refreshMs, 2_000);
    }
    await pause(delay, opts.signal);
  }
  if (opts.withdrawOnStop ?? true) {
    // Applying the entry without our pool drops the pool we owned.
    await opts.client.apply(CSIDriverCapacities, body(undefined), manager, { subresource: 'status' }).catch((err: unknown) => log.warn('could not withdraw the pool; it will expire', { error: errorMessage(err) }));
  }
}
