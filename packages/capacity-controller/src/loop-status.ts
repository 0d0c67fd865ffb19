import type { CSIStorageCapacity, Logger } from '@topovol/shared';
import { loopConditions } from './aggregate/loop-conditions.js';
import { statusEntries, statusPoolName } from './aggregate/status-entries.js';
import type { CapacityEvents, CapacityInformers, CapacityLoopClient, CapacityStatusPublisher } from './capacity-loop-deps.js';
import { capacityMetrics } from './capacity-metrics.js';
import { itemKey } from './objects/capacity-item.js';
import { objectKeys, obsoleteObjects } from './objects/current-objects.js';
import type { ObjectsView } from './objects/current-objects.js';
import type { MeasuredCapacity } from './objects/capacity-object.js';
import type { DesiredItem, DesiredState } from './objects/desired-items.js';
import type { ItemState } from './objects/refresh-timing.js';
import { requestKey } from './source/running-requests.js';
import type { UnimplementedVerdicts } from './source/unimplemented-verdict.js';
import { poolRefKey } from './status/index.js';
import type { StatusCondition } from './status/index.js';
import { StatusRefusals } from './status/status-refusals.js';

/** What the aggregated status reads of the capacity loop (capacity-loop.ts). */
export interface LoopStatusDeps {
  inf: Pick<CapacityInformers, 'objects'>;
  status: CapacityStatusPublisher;
  client: CapacityLoopClient;
  events: CapacityEvents;
  log: Logger;
  driverName: string;
  statusRefreshMs: number;
  /** Per node the aggregated status is the per-node writer's; a dry run writes nothing. */
  writes: boolean;
  /** A time of the loop's clock on the status writer's (the API server's). */
  toStatusTime?: (ms: number) => number;
  /** The driver's objects other publishers manage, for the SolePublisher condition. */
  otherPublisherObjects?: () => readonly CSIStorageCapacity[];
  desired: () => DesiredState;
  state: (key: string) => ItemState | undefined;
  view: () => ObjectsView;
  unsupported: UnimplementedVerdicts;
  /** Why the loop's object writes are denied, if they are (ObjectActuator.refusal). */
  refusal: () => string | undefined;
}

/**
 * The central loop's `status` key: the object counts, and the aggregated status (entries per
 * class and pool, the conditions) published on the CSIDriver's status object.
 */
export class LoopStatus {
  /** The aggregated status's writes the API server refuses, said once per episode. */
  private readonly refusals: StatusRefusals;

  constructor(private readonly d: LoopStatusDeps) {
    this.refusals = new StatusRefusals({ client: d.client, events: d.events, log: d.log, driverName: d.driverName });
  }

  /** Publishes; returns when to publish again. */
  async publish(): Promise<number> {
    const { d } = this;
    const view = d.view();
    const keys = objectKeys(view);
    capacityMetrics.setObjectCounts(
      keys.size,
      [...keys].filter((k) => d.inf.objects.cache.byIndex('item', k).length > 0).length,
      obsoleteObjects(view, keys).length,
    );
    const desired = d.desired();
    // A figure is renewed while its last call succeeded; once the driver cannot be asked, it keeps
    // the expiry of its last answer and lapses.
    const entries = statusEntries(desired.items.values(), (item) => {
      const st = d.state(itemKey(item.item));
      const figure = figureFor(item, st);
      if (!st || !figure) return undefined;
      return st.error !== undefined || d.unsupported.of(item.parameters)?.message !== undefined ? { ...figure, atMs: (d.toStatusTime ?? ((ms: number) => ms))(st.refreshedAt) } : figure;
    });
    if (!d.writes) return d.statusRefreshMs;
    // Pools of items not measured since this process started (a restart) stay as published.
    const unmeasured = new Set<string>();
    for (const item of desired.items.values()) if (!d.state(itemKey(item.item))?.measured) unmeasured.add(poolRefKey({ storageClassName: item.item.storageClassName, pool: statusPoolName(item) }));
    try {
      await d.status.publish(entries, this.conditions(desired), (storageClassName, pool) => unmeasured.has(poolRefKey({ storageClassName, pool })));
      this.refusals.succeeded();
    } catch (err) {
      // Refused: said once, tried again at the next refresh (the work queue's backoff would reach
      // many minutes); anything else goes to the work queue.
      if (!this.refusals.failed(err)) throw err;
      return d.statusRefreshMs;
    }
    // Not under the refusal check: a prune that lost its race to a per-node writer too often ends
    // in a failed JSON patch test, which the API server answers 422 (patch.go), as it would a refusal.
    await d.status.pruneExpired();
    return d.statusRefreshMs;
  }

  private conditions(desired: DesiredState): StatusCondition[] {
    const { d } = this;
    return loopConditions({
      total: desired.items.size,
      measured: [...desired.items].filter(([k, item]) => figureFor(item, d.state(k)) !== undefined).length,
      failing: failingItem(desired.items, d.state),
      unsupported: d.unsupported.describe(desired.items.values()),
      refused: d.refusal(),
      problems: desired.problems,
      ...(d.otherPublisherObjects ? { others: { driverName: d.driverName, objects: d.otherPublisherObjects() } } : {}),
    });
  }
}

/** Some desired item whose last call failed, named by its class (the Ready condition's message). */
function failingItem(items: ReadonlyMap<string, DesiredItem>, state: (key: string) => ItemState | undefined): string | undefined {
  for (const [key, d] of items) {
    const error = state(key)?.error;
    if (error !== undefined) return `StorageClass ${d.item.storageClassName}: ${error}`;
  }
  return undefined;
}

/**
 * The item's last figure, if measured for the request it makes now: a figure for other parameters
 * (a class made again under its name) is not its own, for the objects, the status and Ready alike.
 */
export function figureFor(d: DesiredItem, st: ItemState | undefined): MeasuredCapacity | undefined {
  return st?.measured && st.measuredFor === requestKey(d.parameters, d.item.segment) ? st.measured : undefined;
}
