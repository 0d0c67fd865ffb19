import { errorMessage, isConflict, isForbidden, isNotFound, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient, ReconcileContext } from '@topovol/shared';
import { capacityMetrics } from '../capacity-metrics.js';
import { itemKey } from './capacity-item.js';
import { itemKeyOfObject } from './capacity-object.js';
import type { ObjectAction } from './plan-capacity-objects.js';

/** The writes the actuator makes: nothing else of the client. */
export type CapacityObjectWriter = Pick<KubeClient, 'create' | 'replace' | 'delete'>;

/**
 * How long a created object is trusted to exist while the informer has not shown it. An informer
 * shows a create within a second or two; one that was deleted before the watch saw it (across a
 * relist, which reports deletes only of objects it had cached) is never shown. After this, the
 * object is planned as missing: created again, and the newer of any two deleted as a duplicate
 * (planItem keeps the oldest).
 */
export const PENDING_TRUST_MS = 60_000;

/** What the actuator asks of the loop: decide everything again, or one item. */
export interface ActuatorCallbacks {
  /** A delete refused because the object changed since it was planned. */
  replan: () => void;
  /** An item's object turned out to be gone: plan the item again (its figure is still current). */
  retryItem: (key: string) => void;
  /** The first write refused (403) since writes last succeeded, with what to do about it. */
  refused: (message: string) => void;
}

/**
 * Carries out the write plans of the capacity loop on CSIStorageCapacity objects, and remembers
 * the objects it created until the informer shows them, so that a quick second pass over the same
 * item does not create a second object (external-provisioner instead deletes such duplicates once
 * they appear: pkg/capacity/capacity.go, onCAddOrUpdate). It remembers them for PENDING_TRUST_MS
 * at most, and forgets one at once when an update finds it gone: external-provisioner does not
 * remember its creates at all, so a missing object is always created again.
 */
export class ObjectActuator {
  /** Objects we created that the informer has not shown yet, by item key, with when they were created. */
  private readonly expected = new Map<string, { object: CSIStorageCapacity; at: number }>();

  constructor(
    private readonly client: CapacityObjectWriter,
    private readonly namespace: string,
    private readonly loop: ActuatorCallbacks,
    private readonly dryRun = false,
    private readonly now: () => number = Date.now,
  ) {}

  /** The object created for `key` that the informer has not shown yet, if any and not too long ago. */
  pending(key: string): CSIStorageCapacity | undefined {
    const e = this.expected.get(key);
    if (e && this.now() - e.at > PENDING_TRUST_MS) {
      this.expected.delete(key);
      return undefined;
    }
    return e?.object;
  }

  /** The informer showed an object of `key`: it no longer needs to be remembered. */
  seen(key: string, name: string | undefined): void {
    if (this.expected.get(key)?.object.metadata?.name === name) this.expected.delete(key);
  }

  /** A deleted object remembered as created is remembered no more. */
  private forget(o: CSIStorageCapacity): void {
    for (const key of itemKeyOfObject(o)) if (this.expected.get(key)?.object.metadata?.name === o.metadata?.name) this.expected.delete(key);
  }

  /**
   * Why writes are refused, from the first refusal until a write succeeds: an RBAC that does not
   * reach --capacity-namespace (docs/install.md, "RBAC"). The figures the scheduler reads then go
   * stale; the loop says so on its status (Ready=False) rather than only in its log.
   */
  get refusal(): string | undefined {
    return this.refused;
  }

  private refused: string | undefined;

  async execute(ctx: ReconcileContext, a: ObjectAction): Promise<void> {
    try {
      await this.write(ctx, a);
      if (!this.dryRun) this.refused = undefined;
    } catch (err) {
      if (!isForbidden(err)) throw err;
      capacityMetrics.refused(a.kind);
      const first = this.refused === undefined;
      this.refused = `CSIStorageCapacity ${a.kind} in namespace ${this.namespace} refused: ${errorMessage(err)}; bind ClusterRole topovol-capacity-namespaced to this loop's ServiceAccount in that namespace (docs/install.md, "RBAC")`;
      if (first) this.loop.refused(this.refused);
      throw err;
    }
  }

  private async write(ctx: ReconcileContext, a: ObjectAction): Promise<void> {
    if (this.dryRun) {
      ctx.log.info('dry run: would write CSIStorageCapacity', { action: a.kind, name: a.object.metadata?.name, storageClass: a.object.storageClassName, capacity: a.object.capacity });
      return;
    }
    switch (a.kind) {
      case 'create': {
        const created = await this.client.create<CSIStorageCapacity>(Resources.csiStorageCapacities, a.object);
        capacityMetrics.wrote('create');
        this.expected.set(itemKey(a.item), { object: created, at: this.now() });
        ctx.log.info('created CSIStorageCapacity', { name: created.metadata?.name, storageClass: a.item.storageClassName, segment: a.item.segment, pool: a.item.pool || undefined, capacity: created.capacity });
        return;
      }
      case 'update':
        try {
          await this.client.replace(Resources.csiStorageCapacities, a.object);
          capacityMetrics.wrote('update');
          ctx.log.info('updated CSIStorageCapacity', { name: a.object.metadata?.name, changed: a.changed, capacity: a.object.capacity });
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // Deleted meanwhile. One the informer had shown comes back with its delete event; one
          // only remembered as created never will: forget it, and plan the item again now.
          const key = itemKey(a.item);
          if (this.expected.get(key)?.object.metadata?.name === a.object.metadata?.name) {
            this.expected.delete(key);
            this.loop.retryItem(key);
          }
        }
        return;
      case 'delete':
        try {
          const md = a.object.metadata ?? {};
          await this.client.delete(Resources.csiStorageCapacities, md.name ?? '', this.namespace, { preconditions: { uid: md.uid, resourceVersion: md.resourceVersion } });
          capacityMetrics.wrote('delete');
          ctx.log.info('deleted CSIStorageCapacity', { name: md.name, why: a.why });
          this.forget(a.object);
        } catch (err) {
          // Gone: one remembered as created (a duplicate the informer never showed) is forgotten,
          // or each refresh would plan its delete again until PENDING_TRUST_MS.
          if (isNotFound(err)) return this.forget(a.object);
          // Changed since we looked: decide again on fresh data.
          if (isConflict(err)) return this.loop.replan();
          throw err;
        }
    }
  }
}
