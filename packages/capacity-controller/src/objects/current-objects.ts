import type { CSIStorageCapacity } from '@topovol/shared';
import type { InformerView } from '../capacity-loop-deps.js';
import { EPHEMERAL_CLASS, itemBaseKey } from './capacity-item.js';
import type { DesiredState } from './desired-items.js';
import { madeForEarlierClass, planObsolete } from './plan-capacity-objects.js';
import type { ObjectAction } from './plan-capacity-objects.js';

/**
 * The CSIStorageCapacity objects the capacity loop sees, read against what it wants: the cached
 * objects (indexed by item key, see itemKeyOfObject), the latest desired state, and the object just
 * created for an item that the cache may not show yet.
 */
export interface ObjectsView {
  desired: DesiredState;
  objects: InformerView<CSIStorageCapacity>;
  pending: (key: string) => CSIStorageCapacity | undefined;
}

/** Keys of the items that have CSIStorageCapacity objects (not `<ephemeral>`). */
export function objectKeys(v: ObjectsView): Set<string> {
  return new Set([...v.desired.items].filter(([, d]) => d.item.storageClassName !== EPHEMERAL_CLASS).map(([k]) => k));
}

/** The deletes a sync plans for objects no desired item explains (planObsolete). */
export function obsoleteObjects(v: ObjectsView, keys: ReadonlySet<string>): ObjectAction[] {
  const d = v.desired;
  return planObsolete(keys, v.objects.cache.list(), d.frozen, awaitingObjects(v), d.created, [...d.items.values()].map((x) => x.item));
}

/** An item's objects that are not being deleted, never one made for an earlier class of this name (planObsolete deletes those). */
export function currentObjects(v: ObjectsView, key: string, cls: string): CSIStorageCapacity[] {
  const created = v.desired.created.get(cls);
  return v.objects.cache.byIndex('item', key).filter((o) => !o.metadata?.deletionTimestamp && !madeForEarlierClass(o, created));
}

/** An object whose class is not tracked (deleted, another driver's, Immediate) or was re-created since. */
export function classGone(v: ObjectsView, o: CSIStorageCapacity): boolean {
  const cls = o.storageClassName ?? '';
  return !v.desired.created.has(cls) || madeForEarlierClass(o, v.desired.created.get(cls));
}

/** Base keys of the items that have no object yet, not even one just created (see planObsolete). */
function awaitingObjects(v: ObjectsView): Set<string> {
  const out = new Set<string>();
  for (const [key, d] of v.desired.items) {
    if (d.item.storageClassName === EPHEMERAL_CLASS || v.pending(key)) continue;
    if (currentObjects(v, key, d.item.storageClassName).length > 0) continue;
    out.add(itemBaseKey(d.item));
  }
  return out;
}
