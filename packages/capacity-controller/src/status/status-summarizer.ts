import { isConflict, isNotFound } from '@topovol/shared';
import type { Logger } from '@topovol/shared';
import type { CSIDriverCapacity, CSIDriverCapacityShard } from './capacity-status-types.js';
import { expiredPools } from './expiry.js';
import { statusApplier } from './managed-fields.js';
import { isLiveSummary, shardSummaryNeedsWrite, summarizeShard, totalsFromShards } from './shard-summary.js';
import { sameSummary } from './status-summary.js';
import type { StatusObjectWriter } from './status-object-writer.js';

/** Owns the totals (classCount, poolCount, totalCapacity) on the head; shared by every summarizer. */
export const SUMMARY_FIELD_MANAGER = 'topovol-capacity-summary';

/**
 * The owner of one shard's entry in the head's status.shards[]: one manager per shard, because an
 * apply that leaves out entries the manager owned removes them, and each summarizer writes only
 * the shards it has read.
 */
export function shardSummaryManager(shard: number): string {
  return `${SUMMARY_FIELD_MANAGER}/shard-${shard}`;
}

/** Shards a per-node pruner cleans up per round besides its own (those nobody else prunes). */
const MAX_ABANDONED_PER_ROUND = 4;
const MAX_TOTALS_CONFLICTS = 5;

export interface StatusSummarizerOptions {
  head: StatusObjectWriter<CSIDriverCapacity>;
  shard: (index: number) => StatusObjectWriter<CSIDriverCapacityShard>;
  expiryMs: number;
  now: () => number;
  log: Logger;
}

/**
 * Keeps the head's summary in step with the shards without anyone reading all of them: whoever has
 * just read or pruned a shard writes that shard's entry (counts per class), and the totals are
 * computed from the entries, on the small head. The totals are written with the head's
 * resourceVersion as a precondition, so of two summarizers racing the one with the older view
 * fails, reads again and recomputes: the last totals written are those of the last entries.
 */
export class StatusSummarizer {
  /**
   * The head as this summarizer last read or wrote it, and when: the view is true as of `at` only.
   * Entries are judged as of that instant, not now: another shard's pruner renews its entry while
   * this copy ages, so an entry that has lapsed in an old copy may well be live, and taking it for
   * abandoned would read that shard and rewrite its entry for nothing, and drop its pools from the
   * totals. An entry that had already lapsed when the copy was made had no live pruner then.
   */
  private view?: { head: CSIDriverCapacity; at: number };

  constructor(private readonly opts: StatusSummarizerOptions) {}

  private seen(head: CSIDriverCapacity): CSIDriverCapacity {
    this.view = { head, at: this.opts.now() };
    return head;
  }

  /**
   * shards: the shards the caller has just read or written (undefined: it does not exist). complete:
   * they are all the driver's shards, so an entry for any other shard is stale; otherwise entries
   * of other shards are checked only once they have expired (their pruner is gone). head: a fresh
   * read of the head, if the caller has one. Returns the pools pruned from the head itself
   * (entries written before sharding).
   */
  async summarize(shards: ReadonlyMap<number, CSIDriverCapacityShard | undefined>, opts: { complete: boolean; head?: CSIDriverCapacity }): Promise<number> {
    if (opts.head) this.seen(opts.head);
    let head = this.view?.head ?? this.seen(await this.opts.head.getOrCreate());
    for (const [index, obj] of shards) head = await this.writeEntry(head, index, obj);
    const others = (head.status?.shards ?? []).map((s) => s.shard).filter((i) => !shards.has(i));
    if (opts.complete) {
      for (const index of others) head = await this.writeEntry(head, index, undefined);
    } else {
      const asOf = this.view!.at;
      const abandoned = (head.status?.shards ?? []).filter((s) => !shards.has(s.shard) && !isLiveSummary(s, asOf));
      for (const s of abandoned.slice(0, MAX_ABANDONED_PER_ROUND)) head = await this.cleanUp(head, s.shard);
    }
    let pruned = 0;
    if (expiredPools(head.status, this.opts.now()).length > 0) {
      const r = await this.opts.head.prune(head);
      pruned = r.pruned;
      if (r.obj) head = this.seen(r.obj);
    }
    await this.writeTotals(head, this.view!.at);
    return pruned;
  }

  /** A shard whose entry expired: prune what its writers left and let its entry say so. */
  private async cleanUp(head: CSIDriverCapacity, index: number): Promise<CSIDriverCapacity> {
    const writer = this.opts.shard(index);
    let obj = await writer.read();
    if (obj) obj = (await writer.prune(obj)).obj;
    this.opts.log.info('cleaned up a shard no live writer prunes', { shard: writer.name, present: obj !== undefined });
    return this.writeEntry(head, index, obj);
  }

  private async writeEntry(head: CSIDriverCapacity, index: number, obj: CSIDriverCapacityShard | undefined): Promise<CSIDriverCapacity> {
    const nowMs = this.opts.now();
    const want = summarizeShard(index, obj?.status?.storage, nowMs);
    const live = head.status?.shards?.find((s) => s.shard === index);
    if (!shardSummaryNeedsWrite(live, want, nowMs, this.opts.expiryMs)) return head;
    const manager = shardSummaryManager(index);
    // Nothing live: release the entry (apply nothing), which also drops the manager from managedFields.
    if ((want.classes?.length ?? 0) === 0 && !statusApplier(head, manager)) return head;
    const status = (want.classes?.length ?? 0) > 0 ? { shards: [want] } : undefined;
    return this.seen(await this.opts.head.applyStatus('summary', manager, status, { force: true, recreate: true }));
  }

  /** The totals from the entries as they were at `asOf` (the view's time: see `view`). */
  private async writeTotals(start: CSIDriverCapacity, asOf: number): Promise<void> {
    let head = start;
    for (let conflicts = 0; ; ) {
      const want = totalsFromShards(head.status?.shards, asOf);
      if (sameSummary(head.status, want)) return;
      try {
        this.seen(await this.opts.head.applyStatus('summary', SUMMARY_FIELD_MANAGER, { ...want }, { force: true, resourceVersion: head.metadata?.resourceVersion }));
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err)) throw err;
        // Another summarizer wrote since our read: recompute from what is there now. After a few
        // rounds give up: each conflict means a newer write, whose writer computes the totals
        // after it (and only a view of the latest head can pass the precondition).
        if (++conflicts > MAX_TOTALS_CONFLICTS) {
          this.opts.log.debug('totals left to a later summarizer', { conflicts });
          return;
        }
        const fresh = await this.opts.head.read();
        if (!fresh) return;
        head = this.seen(fresh);
        asOf = this.view!.at;
      }
    }
  }
}
