import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, logger } from '@topovol/shared';
import type { KubeClient, Logger } from '@topovol/shared';
import { buildStorageStatus } from './build-storage-status.js';
import { EPHEMERAL_STORAGE_CLASS } from './capacity-status-types.js';
import type { CapacityStatusObject, CSIDriverCapacityShard } from './capacity-status-types.js';
import { CSIDriverOwner } from './csidriver-owner.js';
import { isExpired } from './expiry.js';
import { headWriter, shardWriter } from './status-object-targets.js';
import type { StatusObjectWriter } from './status-object-writer.js';
import { DEFAULT_STATUS_SHARDS, fnv1a32Hex, shardCountProblem, shardOf } from './status-shards.js';
import { StatusSummarizer } from './status-summarizer.js';

/** A per-node writer's field manager; field manager names are limited to 128 characters. */
export function perNodeFieldManager(nodeName: string, prefix = 'topovol-capacity/'): string {
  const name = prefix + nodeName;
  if (name.length <= 128) return name;
  // A readable head plus a hash (FNV-1a) of the whole node name keeps it unique and stable.
  return `${name.slice(0, 119)}-${fnv1a32Hex(nodeName)}`;
}

/**
 * Whether this node's writer is the one that prunes its shard: the live pool with the smallest name
 * in its storage entry of that shard (or anyone, when no pool is live). Decided from the shard as
 * the writer last saw it, so pruning needs neither an election nor extra reads, and the writers of
 * a shard do not all prune at once; if that writer dies, its own entry expires and the next one
 * takes over. `asOfMs` is when that copy was read or written: a non-pruner's copy comes from its own
 * last write, up to expiryMs/2 and a poll old, and the pruner renews its pool meanwhile, so judged
 * as of now its pool would seem to lapse in the copy and every writer of the shard would take a
 * turn at pruning. A pool that had lapsed when the copy was made was not renewed in time; the next
 * writer takes over at its next write after that, within expiryMs/2 and a poll.
 */
export function isPruner(obj: CapacityStatusObject | undefined, storageClassName: string, nodeName: string, asOfMs: number, expiryMs = Infinity): boolean {
  const entry = obj?.status?.storage?.find((s) => s.storageClassName === storageClassName);
  // A pool whose expiry lies further ahead than a writer of this shard sets one (a clock that ran
  // ahead) is no sign of a live writer: its writer may be gone, and then nobody would prune.
  const plausible = (p: { expiryTime?: string }): boolean => p.expiryTime === undefined || !(Date.parse(p.expiryTime) > asOfMs + expiryMs);
  const live = (entry?.pools ?? []).filter((p) => !isExpired(p, asOfMs) && plausible(p)).map((p) => p.name);
  if (live.length === 0) return true;
  return live.reduce((a, b) => (b < a ? b : a)) === nodeName;
}

export interface NodeShardWriterOptions {
  driverName: string;
  nodeName: string;
  expiryMs: number;
  /** --capacity-status-shards, the same for every writer of the driver. */
  shards?: number;
  /** Default '<ephemeral>' (the capacity for inline ephemeral volumes). */
  storageClassName?: string;
  now?: () => number;
  log?: Logger;
}

/**
 * One node's pool { name: node, nodeList: [node] } in the shard its name hashes to, applied under
 * the node's own field manager. It reads and writes that shard only: a poll with nothing to write
 * decides against the shard as its last write returned it and costs no request (a pool removed by
 * hand comes back at the next refresh, within expiryMs/2). The shard's pruner prunes it and keeps
 * the shard's entry on the head (the only writer of a shard that touches the head): it reads its
 * shard for that once per poll, except in a poll whose own request (a write, or the first read)
 * returned the shard as it is; what others write after that is seen at the next poll.
 */
export class NodeShardWriter {
  readonly shard: number;
  private readonly storageClassName: string;
  private readonly now: () => number;
  private readonly writer: StatusObjectWriter<CSIDriverCapacityShard>;
  private readonly summarizer: StatusSummarizer;
  private cached?: CSIDriverCapacityShard;
  /** When `cached` was read or written. */
  private cachedAt = 0;
  /** The cached shard is this poll's answer from the API server (publish read or wrote it). */
  private fresh = false;

  constructor(
    client: KubeClient,
    private readonly opts: NodeShardWriterOptions,
  ) {
    const shards = opts.shards ?? DEFAULT_STATUS_SHARDS;
    const problem = shardCountProblem(shards);
    if (problem) throw new Error(`shard count ${shards}: ${problem}`);
    this.shard = shardOf(opts.nodeName, shards);
    this.storageClassName = opts.storageClassName ?? EPHEMERAL_STORAGE_CLASS;
    this.now = opts.now ?? Date.now;
    const log = (opts.log ?? logger()).child({ component: 'capacity-status', driver: opts.driverName, node: opts.nodeName, shard: this.shard });
    const common = { fieldManager: perNodeFieldManager(opts.nodeName), expiryMs: opts.expiryMs, owner: new CSIDriverOwner(client, opts.driverName, opts.expiryMs, this.now), now: this.now, log };
    this.writer = shardWriter(client, opts.driverName, this.shard, common);
    const shard = (i: number): StatusObjectWriter<CSIDriverCapacityShard> => (i === this.shard ? this.writer : shardWriter(client, opts.driverName, i, common));
    this.summarizer = new StatusSummarizer({ head: headWriter(client, opts.driverName, common), shard, expiryMs: opts.expiryMs, now: this.now, log });
  }

  /** Applies the node's figure when it differs from what the shard holds for it, or needs a refresh. */
  async publish(figure: { capacity: string; maximumVolumeSize?: string }): Promise<{ wrote: boolean }> {
    const entry = { storageClassName: this.storageClassName, pool: this.opts.nodeName, nodeList: [this.opts.nodeName], ...figure };
    const { storage, rejected } = buildStorageStatus([entry], this.now(), this.opts.expiryMs);
    if (rejected.length > 0) throw new Error(`capacity entry not published: ${rejected[0]!.reason}`);
    try {
      const known = this.cached !== undefined;
      const r = await this.writer.publish({ storage, conditions: [] }, this.cached);
      this.fresh = r.wrote || !known;
      this.cached = r.obj;
      // Only a copy the API server just returned is as of now. A poll that wrote nothing hands back
      // the old copy, whose other pools are as old as it is: dating it now would make a pool its
      // owner has renewed since look lapsed, and a non-pruner would take a turn at pruning (a read
      // of the shard and of the head in a poll that should cost nothing).
      if (this.fresh) this.cachedAt = this.now();
      return { wrote: r.wrote };
    } catch (err) {
      // Read again next time: the shard may have changed in a way the cached copy hides.
      this.cached = undefined;
      this.fresh = false;
      throw err;
    }
  }

  /** When this node prunes its shard: removes expired pools there and updates the head. Returns the pools removed. */
  async maintain(): Promise<number> {
    const fresh = this.fresh;
    this.fresh = false;
    if (!isPruner(this.cached, this.storageClassName, this.opts.nodeName, this.cachedAt, this.opts.expiryMs)) return 0;
    let obj = fresh ? this.cached : await this.writer.read();
    let pruned = 0;
    if (obj) ({ pruned, obj } = await this.writer.prune(obj));
    this.cached = obj;
    this.cachedAt = this.now();
    pruned += await this.summarizer.summarize(new Map([[this.shard, obj]]), { complete: false });
    return pruned;
  }
}

export interface PerNodeWriterOptions extends NodeShardWriterOptions {
  client: KubeClient;
  /** How often to ask for capacity; keep it at most half of expiryMs so the entry never lapses while the writer runs. */
  refreshMs: number;
  /** The driver's answer for this node (GetCapacity with empty parameters). */
  capacity: () => Promise<{ capacity: string; maximumVolumeSize?: string }>;
  signal: AbortSignal;
}

/**
 * The per-node mode (one instance per node, e.g. a DaemonSet with --capacity-node-name): asks for
 * the node's capacity every refreshMs and publishes it through a NodeShardWriter. Stopping does not
 * remove the entry: a restarting pod must not make the node's capacity flap; if the writer does
 * not come back the entry expires and is pruned. Resolves when the signal aborts.
 */
export async function runPerNodeWriter(opts: PerNodeWriterOptions): Promise<void> {
  const log = (opts.log ?? logger()).child({ component: 'capacity-status', driver: opts.driverName, node: opts.nodeName });
  if (opts.refreshMs > opts.expiryMs / 2) log.warn('refresh interval above half the expiry: the entry may lapse between refreshes', { refreshMs: opts.refreshMs, expiryMs: opts.expiryMs });
  const writer = new NodeShardWriter(opts.client, opts);
  while (!opts.signal.aborted) {
    try {
      const c = await opts.capacity();
      if (opts.signal.aborted) break;
      await writer.publish(c);
    } catch (err) {
      // The entry stays until it expires: stale capacity for one expiry period beats none.
      if (opts.signal.aborted) break;
      log.warn('cannot publish node capacity', { error: errorMessage(err) });
    }
    try {
      if (!opts.signal.aborted) await writer.maintain();
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
