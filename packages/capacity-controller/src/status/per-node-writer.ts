import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, logger } from '@topovol/shared';
import type { KubeClient, Logger } from '@topovol/shared';
import { CapacityStatusWriter } from './capacity-status-writer.js';
import { EPHEMERAL_STORAGE_CLASS } from './capacity-status-types.js';
import type { CSIDriverCapacity } from './capacity-status-types.js';
import { isExpired } from './expiry.js';

export interface PerNodeWriterOptions {
  client: KubeClient;
  driverName: string;
  nodeName: string;
  /** How often to ask for capacity; keep it at most half of expiryMs so the entry never lapses while the writer runs. */
  refreshMs: number;
  expiryMs: number;
  /** The driver's answer for this node (GetCapacity with empty parameters, seed 000). */
  capacity: () => Promise<{ capacity: string; maximumVolumeSize?: string }>;
  signal: AbortSignal;
  /** Default '<ephemeral>' (seed 000 "Only inline ephemeral volumes"). */
  storageClassName?: string;
  now?: () => number;
  log?: Logger;
}

/** A per-node writer's field manager; field manager names are limited to 128 characters. */
export function perNodeFieldManager(nodeName: string, prefix = 'topovol-capacity/'): string {
  const name = prefix + nodeName;
  if (name.length <= 128) return name;
  // A readable head plus a hash (FNV-1a) of the whole node name keeps it unique and stable.
  let h = 0x811c9dc5;
  for (let i = 0; i < nodeName.length; i++) h = Math.imul(h ^ nodeName.charCodeAt(i), 0x01000193) >>> 0;
  return `${name.slice(0, 119)}-${h.toString(16).padStart(8, '0')}`;
}

/**
 * Whether this node's writer is the one that prunes: the live pool with the smallest name in its
 * storage entry (or anyone, when no pool is live). Decided from the object each writer already
 * read, so pruning needs neither an election nor extra reads, and 1,000 writers do not all
 * prune at once; if that writer dies, its own entry expires and the next one takes over.
 */
export function isPruner(obj: CSIDriverCapacity | undefined, storageClassName: string, nodeName: string, nowMs: number): boolean {
  const entry = obj?.status?.storage?.find((s) => s.storageClassName === storageClassName);
  const live = (entry?.pools ?? []).filter((p) => !isExpired(p, nowMs)).map((p) => p.name);
  if (live.length === 0) return true;
  return live.reduce((a, b) => (b < a ? b : a)) === nodeName;
}

/**
 * The per-node mode (one instance per node, e.g. a DaemonSet with --node-name): owns exactly one
 * pool { name: node, nodeList: [node] } in one storage entry, applied under its own field manager
 * and refreshed before it expires. Stopping does not remove the entry: a restarting pod must not
 * make the node's capacity flap; if the writer does not come back the entry expires and is pruned.
 * Resolves when the signal aborts.
 */
export async function runPerNodeWriter(opts: PerNodeWriterOptions): Promise<void> {
  const storageClassName = opts.storageClassName ?? EPHEMERAL_STORAGE_CLASS;
  const now = opts.now ?? Date.now;
  const log = (opts.log ?? logger()).child({ component: 'capacity-status', driver: opts.driverName, node: opts.nodeName });
  if (opts.refreshMs > opts.expiryMs / 2) log.warn('refresh interval above half the expiry: the entry may lapse between refreshes', { refreshMs: opts.refreshMs, expiryMs: opts.expiryMs });
  const common = { driverName: opts.driverName, expiryMs: opts.expiryMs, now, log };
  const writer = new CapacityStatusWriter(opts.client, { ...common, fieldManager: perNodeFieldManager(opts.nodeName), summarizeOnPublish: false });
  const pruner = new CapacityStatusWriter(opts.client, { ...common, fieldManager: perNodeFieldManager(opts.nodeName) });
  while (!opts.signal.aborted) {
    try {
      const c = await opts.capacity();
      if (opts.signal.aborted) break;
      await writer.publish([{ storageClassName, pool: opts.nodeName, nodeList: [opts.nodeName], ...c }], []);
    } catch (err) {
      // The entry stays until it expires: stale capacity for one expiry period beats none.
      if (opts.signal.aborted) break;
      log.warn('cannot publish node capacity', { error: errorMessage(err) });
    }
    try {
      if (!opts.signal.aborted && isPruner(writer.lastObserved, storageClassName, opts.nodeName, now())) await pruner.pruneExpired();
    } catch (err) {
      if (opts.signal.aborted) break;
      log.warn('cannot prune expired capacity entries', { error: errorMessage(err) });
    }
    try {
      // ±10% jitter: writers started together (a DaemonSet rollout) do not stay in lockstep.
      await sleep(opts.refreshMs * (0.9 + 0.2 * Math.random()), undefined, { signal: opts.signal });
    } catch {
      break;
    }
  }
}
