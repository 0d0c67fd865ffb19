import { isConflict, isNotFound, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient, ReconcileContext } from '@topovol/shared';
import { capacityMetrics } from '../capacity-metrics.js';
import { itemKey } from './capacity-item.js';
import type { ObjectAction } from './plan-capacity-objects.js';

/** The writes the actuator makes: nothing else of the client. */
export type CapacityObjectWriter = Pick<KubeClient, 'create' | 'replace' | 'delete'>;

/**
 * Carries out the write plans of the capacity loop on CSIStorageCapacity objects, and remembers
 * the objects it created until the informer shows them, so that a quick second pass over the same
 * item does not create a second object (external-provisioner instead deletes such duplicates once
 * they appear: pkg/capacity/capacity.go, onCAddOrUpdate).
 */
export class ObjectActuator {
  /** Objects we created that the informer has not shown yet, by item key. */
  private readonly expected = new Map<string, CSIStorageCapacity>();

  constructor(
    private readonly client: CapacityObjectWriter,
    private readonly namespace: string,
    /** A delete refused because the object changed since it was planned: decide again. */
    private readonly replan: () => void,
    private readonly dryRun = false,
  ) {}

  /** The object created for `key` that the informer has not shown yet, if any. */
  pending(key: string): CSIStorageCapacity | undefined {
    return this.expected.get(key);
  }

  /** The informer showed an object of `key`: it no longer needs to be remembered. */
  seen(key: string, name: string | undefined): void {
    if (this.expected.get(key)?.metadata?.name === name) this.expected.delete(key);
  }

  async execute(ctx: ReconcileContext, a: ObjectAction): Promise<void> {
    if (this.dryRun) {
      ctx.log.info('dry run: would write CSIStorageCapacity', { action: a.kind, name: a.object.metadata?.name, storageClass: a.object.storageClassName, capacity: a.object.capacity });
      return;
    }
    switch (a.kind) {
      case 'create': {
        const created = await this.client.create<CSIStorageCapacity>(Resources.csiStorageCapacities, a.object);
        capacityMetrics.wrote('create');
        this.expected.set(itemKey(a.item), created);
        ctx.log.info('created CSIStorageCapacity', { name: created.metadata?.name, storageClass: a.item.storageClassName, segment: a.item.segment, pool: a.item.pool || undefined, capacity: created.capacity });
        return;
      }
      case 'update':
        try {
          await this.client.replace(Resources.csiStorageCapacities, a.object);
          capacityMetrics.wrote('update');
          ctx.log.info('updated CSIStorageCapacity', { name: a.object.metadata?.name, changed: a.changed, capacity: a.object.capacity });
        } catch (err) {
          // Deleted meanwhile: the delete event brings the item back and it is created again.
          if (!isNotFound(err)) throw err;
        }
        return;
      case 'delete':
        try {
          const md = a.object.metadata ?? {};
          await this.client.delete(Resources.csiStorageCapacities, md.name ?? '', this.namespace, { preconditions: { uid: md.uid, resourceVersion: md.resourceVersion } });
          capacityMetrics.wrote('delete');
          ctx.log.info('deleted CSIStorageCapacity', { name: md.name, why: a.why });
        } catch (err) {
          if (isNotFound(err)) return;
          // Changed since we looked: decide again on fresh data.
          if (isConflict(err)) return this.replan();
          throw err;
        }
    }
  }
}
