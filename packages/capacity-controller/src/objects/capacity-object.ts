import type { CSIStorageCapacity } from '@topovol/shared';
import type { CapacityItem } from './capacity-item.js';
import { itemKey, itemSelector } from './capacity-item.js';
import { formatBytes, LABEL_CSI_DRIVER_NAME, LABEL_CSI_MANAGED_BY } from '@topovol/shared';

/** Which topology-constrained pool an object reports (absent for ordinary per-segment objects). */
export const LABEL_POOL = 'capacity.topovol.io/pool';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

/** Who we are: where our objects live and how they are labelled and owned. */
export interface ObjectIdentity {
  driverName: string;
  managedBy: string;
  namespace: string;
  owner?: OwnerReference;
}

export interface MeasuredCapacity {
  available: bigint;
  maximumVolumeSize?: bigint;
}

/** The selector of our objects in the namespace (also the informer's label selector). */
export function managedSelector(id: ObjectIdentity): string {
  return `${LABEL_CSI_DRIVER_NAME}=${id.driverName},${LABEL_CSI_MANAGED_BY}=${id.managedBy}`;
}

/** The item an object of ours reports, or undefined when its shape is not one we write. */
export function itemOfObject(o: CSIStorageCapacity): CapacityItem | undefined {
  const topo = o.nodeTopology;
  if (!o.storageClassName || !topo) return undefined;
  const exprs = topo.matchExpressions ?? [];
  // We only ever write DoesNotExist expressions (deeper keys), in key order.
  if (exprs.some((e) => e.operator !== 'DoesNotExist' || (e.values?.length ?? 0) > 0)) return undefined;
  const absent = exprs.map((e) => e.key);
  if (absent.some((k, i) => i > 0 && absent[i - 1]! >= k)) return undefined;
  return { storageClassName: o.storageClassName, segment: { ...(topo.matchLabels ?? {}) }, pool: o.metadata?.labels?.[LABEL_POOL] ?? '', ...(absent.length ? { absent } : {}) };
}

/**
 * The objects informer's `item` index: an object under the key of the item it reports. A module
 * function, since addIndex accepts an index added again only as the same function.
 */
export function itemKeyOfObject(o: CSIStorageCapacity): string[] {
  const item = itemOfObject(o);
  return item ? [itemKey(item)] : [];
}

/** A new object for an item (generateName as upstream: the name carries no meaning). */
export function newCapacityObject(id: ObjectIdentity, item: CapacityItem, c: MeasuredCapacity): CSIStorageCapacity {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIStorageCapacity',
    metadata: {
      generateName: 'csisc-',
      namespace: id.namespace,
      labels: { [LABEL_CSI_DRIVER_NAME]: id.driverName, [LABEL_CSI_MANAGED_BY]: id.managedBy, ...(item.pool ? { [LABEL_POOL]: item.pool } : {}) },
      ...(id.owner ? { ownerReferences: [{ ...id.owner }] } : {}),
    },
    storageClassName: item.storageClassName,
    nodeTopology: itemSelector(item),
    capacity: formatBytes(c.available),
    ...(c.maximumVolumeSize !== undefined ? { maximumVolumeSize: formatBytes(c.maximumVolumeSize) } : {}),
  };
}
