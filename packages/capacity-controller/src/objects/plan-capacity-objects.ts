import type { CSIStorageCapacity } from '@topovol/shared';
import type { CapacityItem } from './capacity-item.js';
import { itemBaseKey, itemKey } from './capacity-item.js';
import type { MeasuredCapacity, ObjectIdentity } from './capacity-object.js';
import { itemOfObject, newCapacityObject } from './capacity-object.js';
import { formatBytes, quantityBytes } from '@topovol/shared';

export type ObjectAction =
  | { kind: 'create'; item: CapacityItem; object: CSIStorageCapacity }
  /** `object` is the existing object with the new values (its resourceVersion is the precondition). */
  | { kind: 'update'; item: CapacityItem; object: CSIStorageCapacity; changed: string[] }
  | { kind: 'delete'; object: CSIStorageCapacity; why: 'obsolete' | 'duplicate' };

/**
 * What one item needs: nothing when an object already says what the driver said (no write for
 * an unchanged world), an update of the oldest matching object when values or the owner differ (our
 * owner replacing any other controller reference), a
 * create when there is none (also when someone deleted ours), and deletes of any duplicates.
 */
export function planItem(id: ObjectIdentity, item: CapacityItem, measured: MeasuredCapacity, objects: readonly CSIStorageCapacity[]): ObjectAction[] {
  if (objects.length === 0) return [{ kind: 'create', item, object: newCapacityObject(id, item, measured) }];
  const [keep, ...dups] = [...objects].sort(byAge);
  const actions: ObjectAction[] = dups.map((object) => ({ kind: 'delete', object, why: 'duplicate' }));
  const changed: string[] = [];
  const next: CSIStorageCapacity = { ...keep!, metadata: { ...keep!.metadata } };
  if (quantityBytes(keep!.capacity) !== measured.available) {
    changed.push('capacity');
    next.capacity = formatBytes(measured.available);
  }
  const max = quantityBytes(keep!.maximumVolumeSize);
  if (max !== measured.maximumVolumeSize) {
    changed.push('maximumVolumeSize');
    if (measured.maximumVolumeSize === undefined) delete next.maximumVolumeSize;
    else next.maximumVolumeSize = formatBytes(measured.maximumVolumeSize);
  }
  const refs = keep!.metadata?.ownerReferences ?? [];
  if (id.owner && !refs.some((r) => r.uid === id.owner!.uid && r.controller)) {
    // Our owner replaces any other controller reference (another --capacity-ownerref-level, another
    // pod): the API server accepts at most one controller: true, so appending would fail every update.
    changed.push('ownerReferences');
    next.metadata!.ownerReferences = [...refs.filter((r) => !r.controller && r.uid !== id.owner!.uid), { ...id.owner }];
  }
  if (changed.length > 0) actions.push({ kind: 'update', item, object: next, changed });
  return actions;
}

/**
 * Objects of ours that no desired item explains: their class is gone or no longer ours, their
 * segment lost its last node, or their shape is foreign. Classes in `frozen` (a StorageClass we
 * cannot interpret right now) keep their objects until the class is fixed or deleted. An object
 * older than its class (`created`; frozen or not) was made for an earlier class of that name,
 * deleted and re-created (parameters are immutable, so that is how they change) while this process
 * did not see it go: it goes, as external-provisioner deletes a class's objects on the class's
 * delete event (`onSCDelete`, pkg/capacity/capacity.go). An object whose item only changed its
 * `absent` keys (a deeper segment appeared or went), or a pool's object whose pool is now published
 * for other segments, stays until the objects replacing it exist: `replacing` holds the base keys
 * (itemBaseKey) of desired items without an object yet. Deleting first would leave the segment's
 * nodes with no capacity at all until the driver answers for the new item, for as long as it
 * cannot. Not a pool's object that can select nodes another pool of its class now serves
 * (`items`): there its figure would stand for a pool Ceph-CSI does not put those volumes in.
 */
export function planObsolete(
  desiredKeys: ReadonlySet<string>,
  objects: readonly CSIStorageCapacity[],
  frozen: ReadonlyMap<string, number>,
  replacing: ReadonlySet<string> = new Set(),
  created: ReadonlyMap<string, number> = new Map(),
  items: Iterable<CapacityItem> = [],
): ObjectAction[] {
  const out: ObjectAction[] = [];
  const pooled = [...items].filter((i) => i.pool !== '');
  for (const o of objects) {
    if (o.metadata?.deletionTimestamp) continue;
    const item = itemOfObject(o);
    if (item && madeForEarlierClass(o, created.get(item.storageClassName) ?? frozen.get(item.storageClassName))) {
      out.push({ kind: 'delete', object: o, why: 'obsolete' });
      continue;
    }
    if (item && frozen.has(item.storageClassName)) continue;
    if (item && desiredKeys.has(itemKey(item))) continue;
    if (item && replacing.has(itemBaseKey(item)) && !(item.pool && pooled.some((i) => i.storageClassName === item.storageClassName && i.pool !== item.pool && selectorsMayMeet(i, item)))) continue;
    out.push({ kind: 'delete', object: o, why: 'obsolete' });
  }
  return out;
}

/**
 * Whether an object was created before the class it names (second resolution on both sides: an
 * object made in the class's second counts as the class's; an unknown time proves nothing).
 */
export function madeForEarlierClass(o: CSIStorageCapacity, classCreated: number | undefined): boolean {
  return classCreated !== undefined && Date.parse(o.metadata?.creationTimestamp ?? '') < classCreated;
}

/**
 * Whether some node could match both items' selectors, judged from the selectors alone: not when
 * they want different values of a key, or one wants a key the other excludes.
 */
function selectorsMayMeet(a: CapacityItem, b: CapacityItem): boolean {
  for (const [k, v] of Object.entries(a.segment)) if (Object.hasOwn(b.segment, k) && b.segment[k] !== v) return false;
  if ((a.absent ?? []).some((k) => Object.hasOwn(b.segment, k)) || (b.absent ?? []).some((k) => Object.hasOwn(a.segment, k))) return false;
  return true;
}

function byAge(a: CSIStorageCapacity, b: CSIStorageCapacity): number {
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1;
}
