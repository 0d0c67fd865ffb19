import { errorMessage, isConflict, isNamespaceGone, isNotFound, isRefusal, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient, ReconcileContext } from '@topovol/shared';
import { capacityMetrics } from '../capacity-metrics.js';
import { itemKey } from './capacity-item.js';
import { itemKeyOfObject } from './capacity-object.js';
import type { ObjectAction } from './plan-capacity-objects.js';
import { isAuthorizationDenial, WriteRefusals } from './write-refusals.js';

const ITEM_PREFIX = 'item:';
/** The refusal target of an item's writes. */
export const ITEM_TARGET = (key: string): string => `${ITEM_PREFIX}${key}`;
/** The refusal target of an obsolete object's delete. */
export const DELETE_TARGET = (name: string | undefined): string => `delete:${name ?? ''}`;

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
  /** A write the API server refused as sent, with what to do about it; `first`: it starts an episode. */
  refused: (message: string, verb: ObjectAction['kind'], first: boolean) => void;
  /** The episode ended: no target owes a denied write any more. */
  cleared: () => void;
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
   * Why writes are denied, while some target's are (write-refusals.ts): an RBAC that does not
   * reach --capacity-namespace (docs/install.md, "RBAC"). The figures the scheduler reads then go
   * stale; the loop says so on its status (Ready=False) rather than only in its log.
   */
  get refusal(): string | undefined {
    return this.refusals.message;
  }

  private readonly refusals = new WriteRefusals();

  /** A pass over these targets ended without a denial: whatever was denied there is no longer owed. */
  settled(done: (target: string) => boolean): void {
    if (this.refusals.settledWhere(done)) this.loop.cleared();
  }

  /**
   * After a sync: denials no pass owes any more, of items no longer desired and of objects no
   * longer obsolete, are settled.
   */
  settleUnowed(desired: ReadonlyMap<string, unknown>, obsolete: readonly CSIStorageCapacity[]): void {
    const names = new Set(obsolete.map((o) => DELETE_TARGET(o.metadata?.name)));
    this.settled((t) => (t.startsWith(ITEM_PREFIX) ? !desired.has(t.slice(ITEM_PREFIX.length)) : !names.has(t)));
  }

  /**
   * Carries out one write, for `passTarget` (ITEM_TARGET of the item whose pass it is; its caller
   * settles it once the pass is done) or else for its own target (DELETE_TARGET of an obsolete
   * object, settled when the write goes through). A refusal (authorization, admission, quota,
   * validation) is recorded, reported and thrown for the runner to retry; a write that goes through
   * settles its target.
   */
  async execute(ctx: ReconcileContext, a: ObjectAction, passTarget?: string): Promise<void> {
    const target = passTarget ?? (a.kind === 'delete' ? DELETE_TARGET(a.object.metadata?.name) : ITEM_TARGET(itemKey(a.item)));
    try {
      await this.write(ctx, a);
      // A pass's target settles at the pass's end (another of its writes may still be denied).
      if (passTarget === undefined) this.settled((t) => t === target);
    } catch (err) {
      // Refused as sent (authorization, an admission plugin, policy or webhook, a quota,
      // validation): the same write is refused again until someone changes the rules, and the
      // published figures go stale meanwhile, so said as loudly as a missing role binding.
      // A namespace being deleted is not a rule someone can change: a plain error, retried.
      if (!isRefusal(err) || isNamespaceGone(err, this.namespace)) throw err;
      const advice = isAuthorizationDenial(err)
        ? `bind ClusterRole topovol-capacity-namespaced to this loop's ServiceAccount in that namespace (docs/install.md, "RBAC")`
        : 'an admission policy or webhook, a quota or validation refuses it: see the message';
      const message = `CSIStorageCapacity ${a.kind} in namespace ${this.namespace} refused: ${errorMessage(err)}; ${advice}`;
      this.loop.refused(message, a.kind, this.refusals.refused(target, message));
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
