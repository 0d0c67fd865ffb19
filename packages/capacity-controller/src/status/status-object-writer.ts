import { errorMessage, isAlreadyExists, isConflict, isInvalid, isNotFound } from '@topovol/shared';
import type { KubeClient, Logger, ResourceType } from '@topovol/shared';
import { CSI_DRIVER_CAPACITY_API_VERSION } from './capacity-status-types.js';
import type { CapacityStatusObject, Condition, CSIDriverCapacityStatus, StorageStatus } from './capacity-status-types.js';
import type { CSIDriverOwner } from './csidriver-owner.js';
import { decidePublish } from './decide-publish.js';
import { poolRefKey } from './expiry.js';
import { planPrune } from './plan-prune.js';
import { countWrite } from './status-writes-metric.js';
import type { StatusWriteOperation } from './status-writes-metric.js';

/** Creates the objects and keeps their ownerReference (metadata and spec only). */
export const OBJECT_FIELD_MANAGER = 'topovol-capacity';

/** One status object: the head (CSIDriverCapacity) or a shard (CSIDriverCapacityShard). */
export interface StatusObjectTarget<T extends CapacityStatusObject> {
  resource: ResourceType;
  name: string;
  /** The spec and labels a new object is created with. */
  spec: NonNullable<T['spec']>;
  labels: Record<string, string>;
}

export interface StatusObjectWriterOptions {
  /** The SSA field manager owning this writer's pools and conditions. */
  fieldManager: string;
  expiryMs: number;
  owner: CSIDriverOwner;
  now: () => number;
  log: Logger;
}

const MAX_PRUNE_STEPS = 20;
const MAX_PRUNE_CONFLICTS = 3;

/**
 * Writes one writer's part of one status object by server-side apply to the status subresource:
 * writers with different field managers own disjoint pools and never conflict. Creates the object
 * (owned by the CSIDriver) when it is missing, writes only when what this manager owns differs from
 * what it wants (decide-publish.ts), and prunes expired pools of any writer.
 */
export class StatusObjectWriter<T extends CapacityStatusObject> {
  constructor(
    private readonly client: KubeClient,
    readonly target: StatusObjectTarget<T>,
    private readonly opts: StatusObjectWriterOptions,
  ) {}

  get name(): string {
    return this.target.name;
  }

  async read(): Promise<T | undefined> {
    try {
      return await this.client.get<T>(this.target.resource, this.target.name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async getOrCreate(): Promise<T> {
    return (await this.read()) ?? this.createOrGet();
  }

  /** Creates the object, or reads it when someone else just did. */
  async createOrGet(): Promise<T> {
    const owner = await this.opts.owner.reference(true);
    const obj = {
      apiVersion: CSI_DRIVER_CAPACITY_API_VERSION,
      kind: this.target.resource.kind,
      metadata: { name: this.target.name, labels: { ...this.target.labels }, ...(owner ? { ownerReferences: [owner] } : {}) },
      spec: this.target.spec,
    } as T;
    if (!owner) this.opts.log.info('CSIDriver not found; creating the capacity status object without an ownerReference', { object: this.target.name });
    try {
      return await this.write('create', () => this.client.create<T>(this.target.resource, obj, { fieldManager: OBJECT_FIELD_MANAGER }));
    } catch (err) {
      // Another writer (e.g. another node) created it first.
      if (!isAlreadyExists(err)) throw err;
      return this.client.get<T>(this.target.resource, this.target.name);
    }
  }

  /** An object created before its CSIDriver existed gets the ownerReference once the CSIDriver appears. */
  async ensureOwnerReference(obj: T): Promise<void> {
    if (obj.metadata?.ownerReferences?.some((r) => r.kind === 'CSIDriver')) return;
    const owner = await this.opts.owner.reference();
    if (!owner) return;
    const config = { apiVersion: CSI_DRIVER_CAPACITY_API_VERSION, kind: this.target.resource.kind, metadata: { name: this.target.name, ownerReferences: [owner] } } as T;
    try {
      await this.write('owner', () => this.client.apply<T>(this.target.resource, config, OBJECT_FIELD_MANAGER, { force: true }));
      this.opts.log.info('CSIDriver appeared; ownerReference added', { object: this.target.name });
    } catch (err) {
      this.opts.log.warn('cannot add the CSIDriver ownerReference', { object: this.target.name, error: errorMessage(err) });
    }
  }

  /**
   * Applies what this manager wants in the object when it differs from what it owns in `live`
   * (read when undefined; null: known not to exist, so created without a read). An absent list
   * releases what the manager owned there (SSA semantics).
   */
  async publish(desired: { storage: StorageStatus[]; conditions: Condition[] }, live?: T | null): Promise<{ wrote: boolean; obj: T; reason?: string }> {
    const obj = live ?? (live === null ? await this.createOrGet() : await this.getOrCreate());
    await this.ensureOwnerReference(obj);
    const decision = decidePublish({ live: obj, fieldManager: this.opts.fieldManager, desired, nowMs: this.opts.now(), expiryMs: this.opts.expiryMs });
    if (!decision.write) return { wrote: false, obj };
    const status: CSIDriverCapacityStatus = {};
    if (desired.storage.length > 0) status.storage = desired.storage;
    if (desired.conditions.length > 0) status.conditions = desired.conditions;
    // Nothing wanted: no status at all. `status: {}` would keep the manager listed, and in a shard
    // nobody else writes it would leave status null, which the schema refuses.
    const written = await this.applyStatus('publish', this.opts.fieldManager, Object.keys(status).length > 0 ? status : undefined, { force: true, recreate: true });
    return { wrote: true, obj: written, reason: decision.reason };
  }

  /**
   * Applies `status` as `manager` to the status subresource. resourceVersion makes it conditional
   * (Conflict when the object changed since); recreate: the object was deleted since it was read
   * (apply to a subresource cannot create), so create it and apply once more.
   */
  async applyStatus(operation: StatusWriteOperation, manager: string, status: CSIDriverCapacityStatus | undefined, opts: { force?: boolean; resourceVersion?: string; recreate?: boolean } = {}): Promise<T> {
    const config = {
      apiVersion: CSI_DRIVER_CAPACITY_API_VERSION,
      kind: this.target.resource.kind,
      metadata: { name: this.target.name, ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}) },
      ...(status ? { status } : {}),
    } as T;
    const apply = (): Promise<T> => this.write(operation, () => this.client.apply<T>(this.target.resource, config, manager, { subresource: 'status', force: opts.force }));
    try {
      return await apply();
    } catch (err) {
      if (!opts.recreate || !isNotFound(err)) throw err;
      await this.getOrCreate();
      return apply();
    }
  }

  /**
   * Removes every expired pool of `obj`, whoever wrote it (see planPrune for how), each step with
   * the resourceVersion it was planned from, so it is safe to run from several writers at once.
   * Returns how many pools went and the object as it is afterwards (undefined once deleted).
   */
  async prune(obj: T): Promise<{ pruned: number; obj: T | undefined }> {
    let current: T | undefined = obj;
    let pruned = 0;
    let conflicts = 0;
    for (let steps = 0; steps < MAX_PRUNE_STEPS && current; steps++) {
      const step = planPrune(current, this.opts.now(), this.target.resource.kind);
      if (!step) break;
      try {
        const name = this.target.name;
        current = await this.write('prune', () =>
          step.kind === 'applyAs'
            ? this.client.apply<T>(this.target.resource, step.config as T, step.manager, { subresource: 'status' })
            : this.client.patch<T>(this.target.resource, name, undefined, 'json', step.patch, { subresource: 'status', fieldManager: this.opts.fieldManager }),
        );
        const present = new Set((current.status?.storage ?? []).flatMap((s) => (s.pools ?? []).map((p) => poolRefKey({ storageClassName: s.storageClassName, pool: p.name }))));
        const removed = step.pools.filter((r) => !present.has(poolRefKey(r)));
        pruned += removed.length;
        this.opts.log.info('pruned expired capacity entries', { object: name, owner: step.kind === 'applyAs' ? step.manager : '(update)', pools: removed.map((r) => `${r.storageClassName}/${r.pool}`) });
      } catch (err) {
        // Someone wrote since we read (maybe the owner refreshing): read again and plan again. A
        // failed JSON patch test answers Invalid rather than Conflict.
        if (!(isConflict(err) || (step.kind === 'remove' && isInvalid(err))) || ++conflicts > MAX_PRUNE_CONFLICTS) throw err;
        current = await this.read();
      }
    }
    return { pruned, obj: current };
  }

  private async write<R>(operation: StatusWriteOperation, fn: () => Promise<R>): Promise<R> {
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
