import { errorMessage, isAlreadyExists, isConflict, isInvalid, isNotFound, logger, Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient, Logger } from '@topovol/shared';
import { buildStorageStatus, rfc3339 } from './build-storage-status.js';
import type { CapacityEntry, StatusCondition } from './capacity-entry.js';
import { CSI_DRIVER_CAPACITY_API_VERSION, CSIDriverCapacities } from './capacity-status-types.js';
import type { CSIDriverCapacity, CSIDriverCapacityStatus } from './capacity-status-types.js';
import { decidePublish } from './decide-publish.js';
import { mergeConditions } from './merge-conditions.js';
import { planPrune } from './plan-prune.js';
import { sameSummary, summarizeStatus } from './status-summary.js';
import { countWrite } from './status-writes-metric.js';
import type { StatusWriteOperation } from './status-writes-metric.js';

/** Creates the object and keeps its ownerReference (metadata and spec only). */
export const OBJECT_FIELD_MANAGER = 'topovol-capacity';
/** Shared by every summarizing writer: the summary is a function of the whole object. */
export const SUMMARY_FIELD_MANAGER = 'topovol-capacity-summary';

export interface CapacityStatusWriterOptions {
  driverName: string;
  /** The SSA field manager owning this writer's storage entries and conditions. */
  fieldManager: string;
  /** How long a published entry stays valid without a refresh. */
  expiryMs: number;
  now?: () => number;
  /** Refresh classCount/poolCount/totalCapacity after each publish (default true; per-node writers leave it to the pruner). */
  summarizeOnPublish?: boolean;
  log?: Logger;
}

const MAX_PRUNE_STEPS = 20;
const MAX_PRUNE_CONFLICTS = 3;

/**
 * Publishes one writer's part of the CSIDriverCapacity status for a driver by server-side apply to
 * the status subresource, so that writers with different field managers own disjoint pool
 * entries and never conflict. Creates the object (owned by the CSIDriver of the same name) when it
 * is missing, writes only when its content changed or its expiry needs a refresh, and prunes
 * expired entries of any writer.
 */
export class CapacityStatusWriter {
  readonly driverName: string;
  readonly fieldManager: string;
  private readonly expiryMs: number;
  private readonly now: () => number;
  private readonly summarizeOnPublish: boolean;
  private readonly log: Logger;
  private observed?: CSIDriverCapacity;
  private lastOwnerCheck = -Infinity;

  constructor(
    private readonly client: KubeClient,
    opts: CapacityStatusWriterOptions,
  ) {
    this.driverName = opts.driverName;
    this.fieldManager = opts.fieldManager;
    this.expiryMs = opts.expiryMs;
    this.now = opts.now ?? Date.now;
    this.summarizeOnPublish = opts.summarizeOnPublish ?? true;
    this.log = (opts.log ?? logger()).child({ component: 'capacity-status', driver: opts.driverName, fieldManager: opts.fieldManager });
  }

  /** The object as last read or written by this writer. */
  get lastObserved(): CSIDriverCapacity | undefined {
    return this.observed;
  }

  async publish(entries: CapacityEntry[], conditions: StatusCondition[]): Promise<{ wrote: boolean }> {
    const nowMs = this.now();
    const { storage, rejected } = buildStorageStatus(entries, nowMs, this.expiryMs);
    for (const r of rejected) this.log.warn('capacity entry not published', { storageClassName: r.entry.storageClassName, pool: r.entry.pool, reason: r.reason });
    let live = await this.getOrCreate();
    await this.ensureOwnerReference(live);
    const desired = { storage, conditions: mergeConditions(conditions, live.status?.conditions, live.metadata?.generation, rfc3339(nowMs)) };
    const decision = decidePublish({ live, fieldManager: this.fieldManager, desired, nowMs, expiryMs: this.expiryMs });
    if (!decision.write) {
      this.observed = live;
      if (this.summarizeOnPublish) await this.summarize(live);
      return { wrote: false };
    }
    const status: CSIDriverCapacityStatus = {};
    // An absent list releases everything this manager owned there (SSA semantics).
    if (storage.length > 0) status.storage = storage;
    if (desired.conditions.length > 0) status.conditions = desired.conditions;
    const config: CSIDriverCapacity = { apiVersion: CSI_DRIVER_CAPACITY_API_VERSION, kind: 'CSIDriverCapacity', metadata: { name: this.driverName }, status };
    try {
      live = await this.write('publish', () => this.client.apply<CSIDriverCapacity>(CSIDriverCapacities, config, this.fieldManager, { subresource: 'status', force: true }));
    } catch (err) {
      // Deleted between our read and the apply: recreate once; apply to a subresource cannot create.
      if (!isNotFound(err)) throw err;
      await this.getOrCreate();
      live = await this.write('publish', () => this.client.apply<CSIDriverCapacity>(CSIDriverCapacities, config, this.fieldManager, { subresource: 'status', force: true }));
    }
    this.observed = live;
    this.log.debug('published capacity status', { reason: decision.reason, classes: storage.length });
    if (this.summarizeOnPublish) await this.summarize(live);
    return { wrote: true };
  }

  /**
   * Removes every expired pool, whoever wrote it (see planPrune for how), then refreshes the
   * summary. Returns how many pools were removed. Safe to run from several instances at once: each
   * step carries the resourceVersion it was planned from.
   */
  async pruneExpired(): Promise<number> {
    let obj = await this.getIfExists();
    if (!obj) return 0;
    let pruned = 0;
    let conflicts = 0;
    for (let steps = 0; steps < MAX_PRUNE_STEPS; steps++) {
      const step = planPrune(obj, this.now());
      if (!step) break;
      try {
        const current: CSIDriverCapacity = obj;
        obj = await this.write('prune', () =>
          step.kind === 'applyAs'
            ? this.client.apply<CSIDriverCapacity>(CSIDriverCapacities, step.config, step.manager, { subresource: 'status' })
            : this.client.patch<CSIDriverCapacity>(CSIDriverCapacities, current.metadata!.name!, undefined, 'json', step.patch, { subresource: 'status', fieldManager: this.fieldManager }),
        );
        const present = new Set((obj.status?.storage ?? []).flatMap((s) => (s.pools ?? []).map((p) => JSON.stringify([s.storageClassName, p.name]))));
        const removed = step.pools.filter((r) => !present.has(JSON.stringify([r.storageClassName, r.pool])));
        pruned += removed.length;
        this.log.info('pruned expired capacity entries', { owner: step.kind === 'applyAs' ? step.manager : '(update)', pools: removed.map((r) => `${r.storageClassName}/${r.pool}`) });
      } catch (err) {
        // Someone wrote since we read (maybe the owner refreshing): re-read and plan again. A failed
        // JSON patch test answers Invalid rather than Conflict.
        if (!(isConflict(err) || (step.kind === 'remove' && isInvalid(err))) || ++conflicts > MAX_PRUNE_CONFLICTS) throw err;
        obj = await this.getIfExists();
        if (!obj) return pruned;
      }
    }
    this.observed = obj;
    await this.summarize(obj);
    return pruned;
  }

  /**
   * Keeps the printer-column fields in step with the object. No resourceVersion precondition: with
   * many writers refreshing, the object changes all the time and a guarded write would almost never
   * land. A summary computed from a slightly older read may overwrite a newer one; it is only the
   * printer columns, and the next round corrects it.
   */
  private async summarize(obj: CSIDriverCapacity): Promise<void> {
    const want = summarizeStatus(obj.status, this.now());
    if (sameSummary(obj.status, want)) return;
    const config: CSIDriverCapacity = {
      apiVersion: CSI_DRIVER_CAPACITY_API_VERSION,
      kind: 'CSIDriverCapacity',
      metadata: { name: this.driverName },
      status: want,
    };
    try {
      this.observed = await this.write('summary', () => this.client.apply<CSIDriverCapacity>(CSIDriverCapacities, config, SUMMARY_FIELD_MANAGER, { subresource: 'status', force: true }));
    } catch (err) {
      // Stale: whoever wrote meanwhile (or the next round) brings a fresher view; not worth a retry.
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  private async getIfExists(): Promise<CSIDriverCapacity | undefined> {
    try {
      return await this.client.get<CSIDriverCapacity>(CSIDriverCapacities, this.driverName);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async getOrCreate(): Promise<CSIDriverCapacity> {
    const existing = await this.getIfExists();
    if (existing) return existing;
    const owner = await this.ownerReference();
    const obj: CSIDriverCapacity = {
      apiVersion: CSI_DRIVER_CAPACITY_API_VERSION,
      kind: 'CSIDriverCapacity',
      metadata: { name: this.driverName, ...(owner ? { ownerReferences: [owner] } : {}) },
      spec: { driverName: this.driverName },
    };
    if (!owner) this.log.info('CSIDriver not found; creating its CSIDriverCapacity without an ownerReference');
    this.lastOwnerCheck = this.now();
    try {
      return await this.write('create', () => this.client.create<CSIDriverCapacity>(CSIDriverCapacities, obj, { fieldManager: OBJECT_FIELD_MANAGER }));
    } catch (err) {
      // Another writer (e.g. another node) created it first.
      if (!isAlreadyExists(err)) throw err;
      return this.client.get<CSIDriverCapacity>(CSIDriverCapacities, this.driverName);
    }
  }

  private async ownerReference(): Promise<{ apiVersion: string; kind: string; name: string; uid: string } | undefined> {
    try {
      const d = await this.client.get<CSIDriver>(Resources.csiDrivers, this.driverName);
      return { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name: this.driverName, uid: d.metadata!.uid! };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * An object created before its CSIDriver existed gets the ownerReference later; looked up at most
   * once per expiry period so that a driver without a CSIDriver object costs no steady reads.
   */
  private async ensureOwnerReference(obj: CSIDriverCapacity): Promise<void> {
    if (obj.metadata?.ownerReferences?.some((r) => r.kind === 'CSIDriver')) return;
    if (this.now() - this.lastOwnerCheck < this.expiryMs) return;
    this.lastOwnerCheck = this.now();
    const owner = await this.ownerReference();
    if (!owner) return;
    const config: CSIDriverCapacity = { apiVersion: CSI_DRIVER_CAPACITY_API_VERSION, kind: 'CSIDriverCapacity', metadata: { name: this.driverName, ownerReferences: [owner] } };
    try {
      await this.write('owner', () => this.client.apply<CSIDriverCapacity>(CSIDriverCapacities, config, OBJECT_FIELD_MANAGER, { force: true }));
      this.log.info('CSIDriver appeared; ownerReference added');
    } catch (err) {
      this.log.warn('cannot add the CSIDriver ownerReference', { error: errorMessage(err) });
    }
  }

  private async write<T>(operation: StatusWriteOperation, fn: () => Promise<T>): Promise<T> {
    try {
      const out = await fn();
      countWrite(operation);
      return out;
    } catch (err) {
      countWrite(operation, err);
      throw err;
    }
  }
}
