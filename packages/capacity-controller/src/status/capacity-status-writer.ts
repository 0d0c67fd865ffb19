import { logger } from '@topovol/shared';
import type { KubeClient, Logger } from '@topovol/shared';
import { buildStorageStatus, rfc3339 } from './build-storage-status.js';
import type { CapacityEntry, StatusCondition } from './capacity-entry.js';
import type { CSIDriverCapacity, CSIDriverCapacityShard } from './capacity-status-types.js';
import { carryOver } from './carry-over.js';
import type { KeepPublished } from './carry-over.js';
import { CSIDriverOwner } from './csidriver-owner.js';
import { expiredPools } from './expiry.js';
import { statusApplier } from './managed-fields.js';
import { mergeConditions } from './merge-conditions.js';
import { listShards, splitByShard } from './shard-objects.js';
import { headWriter, shardWriter } from './status-object-targets.js';
import type { StatusObjectWriter } from './status-object-writer.js';
import { DEFAULT_STATUS_SHARDS, shardCountProblem } from './status-shards.js';
import { StatusSummarizer } from './status-summarizer.js';

export interface CapacityStatusWriterOptions {
  driverName: string;
  /** The SSA field manager owning this writer's pools and conditions. */
  fieldManager: string;
  /** How long a published entry stays valid without a refresh. */
  expiryMs: number;
  /** --capacity-status-shards: how many shard objects the pools are spread over; the same for every writer of a driver. */
  shards?: number;
  now?: () => number;
  /** Keep the head's summary in step after each publish (default true; per-node writers leave it to the shard's pruner). */
  summarizeOnPublish?: boolean;
  log?: Logger;
}

/**
 * Publishes one writer's part of a driver's aggregated capacity status (docs/adr/0010): its pools
 * go to the shard objects their names hash to (CSIDriverCapacityShard `<driver>-<i>`), each by
 * server-side apply under this writer's field manager and only when what it owns there differs;
 * its conditions go to the head (CSIDriverCapacity `<driver>`), which also carries a summary per
 * shard and the totals for the printer columns. No object holds every pool, so none grows past
 * the API server's request limit. One list of the driver's shards per round (publish, then
 * pruneExpired) is what this writer reads.
 */
export class CapacityStatusWriter {
  readonly driverName: string;
  readonly fieldManager: string;
  readonly shards: number;
  private readonly expiryMs: number;
  private readonly now: () => number;
  private readonly summarizeOnPublish: boolean;
  private readonly log: Logger;
  private readonly head: StatusObjectWriter<CSIDriverCapacity>;
  private readonly shardWriters = new Map<number, StatusObjectWriter<CSIDriverCapacityShard>>();
  private readonly summarizer: StatusSummarizer;
  private readonly shard: (index: number) => StatusObjectWriter<CSIDriverCapacityShard>;
  /** The shards the last publish read and wrote, for the pruneExpired that follows it. */
  private observed?: Map<number, CSIDriverCapacityShard | undefined>;

  constructor(
    private readonly client: KubeClient,
    opts: CapacityStatusWriterOptions,
  ) {
    this.driverName = opts.driverName;
    this.fieldManager = opts.fieldManager;
    this.shards = opts.shards ?? DEFAULT_STATUS_SHARDS;
    const problem = shardCountProblem(this.shards);
    if (problem) throw new Error(`shard count ${this.shards}: ${problem}`);
    this.expiryMs = opts.expiryMs;
    this.now = opts.now ?? Date.now;
    this.summarizeOnPublish = opts.summarizeOnPublish ?? true;
    this.log = (opts.log ?? logger()).child({ component: 'capacity-status', driver: opts.driverName, fieldManager: opts.fieldManager });
    const common = { fieldManager: this.fieldManager, expiryMs: this.expiryMs, owner: new CSIDriverOwner(client, this.driverName, this.expiryMs, this.now), now: this.now, log: this.log };
    this.head = headWriter(client, this.driverName, common);
    const shard = (i: number): StatusObjectWriter<CSIDriverCapacityShard> => {
      let w = this.shardWriters.get(i);
      if (!w) this.shardWriters.set(i, (w = shardWriter(client, this.driverName, i, common)));
      return w;
    };
    this.shard = shard;
    this.summarizer = new StatusSummarizer({ head: this.head, shard, expiryMs: this.expiryMs, now: this.now, log: this.log });
  }

  /** keepPublished: pools the caller has no figure for yet, kept as published until they expire (carryOver). */
  async publish(entries: CapacityEntry[], conditions: StatusCondition[], keepPublished?: KeepPublished): Promise<{ wrote: boolean }> {
    const nowMs = this.now();
    const built = buildStorageStatus(entries, nowMs, this.expiryMs);
    for (const r of built.rejected) this.log.warn('capacity entry not published', { storageClassName: r.entry.storageClassName, pool: r.entry.pool, reason: r.reason });
    const live = await listShards(this.client, this.driverName);
    const storage = keepPublished ? carryOver(built.storage, live.values(), this.fieldManager, keepPublished, nowMs, this.expiryMs) : built.storage;
    const wanted = splitByShard(storage, this.shards);
    // Every shard we want pools in, and every one we own some in (to release them: a changed shard
    // count, a segment gone).
    const touched = new Set([...wanted.keys(), ...[...live].filter(([, o]) => o && statusApplier(o, this.fieldManager)).map(([i]) => i)]);
    let wrote = false;
    for (const index of [...touched].sort((a, b) => a - b)) {
      // Not listed: create it without reading it first.
      const r = await this.shard(index).publish({ storage: wanted.get(index) ?? [], conditions: [] }, live.get(index) ?? null);
      live.set(index, r.obj);
      if (r.wrote) this.log.debug('published capacity status', { shard: index, reason: r.reason });
      wrote ||= r.wrote;
    }
    let head: CSIDriverCapacity | undefined;
    if (conditions.length > 0 || this.summarizeOnPublish) {
      head = await this.head.getOrCreate();
      const merged = mergeConditions(conditions, head.status?.conditions, head.metadata?.generation, rfc3339(nowMs));
      // Also releases pools this manager wrote into the head before sharding.
      const r = await this.head.publish({ storage: [], conditions: merged }, head);
      head = r.obj;
      wrote ||= r.wrote;
    }
    this.observed = new Map(live);
    if (this.summarizeOnPublish) await this.summarizer.summarize(live, { complete: true, ...(head ? { head } : {}) });
    return { wrote };
  }

  /**
   * Removes every expired pool of every shard, whoever wrote it (see planPrune), then brings the
   * head's summary in step. Returns how many pools were removed. Safe to run from several
   * instances at once: each step carries the resourceVersion it was planned from.
   */
  async pruneExpired(): Promise<number> {
    const shards = this.observed ?? (await listShards(this.client, this.driverName));
    this.observed = undefined;
    let pruned = 0;
    for (const [index, obj] of shards) {
      if (!obj || expiredPools(obj.status, this.now()).length === 0) continue;
      const r = await this.shard(index).prune(obj);
      pruned += r.pruned;
      shards.set(index, r.obj);
    }
    return pruned + (await this.summarizer.summarize(shards, { complete: true }));
  }
}
