import type {
  CoreV1Event,
  V1CSIDriver,
  V1CSINode,
  V1CSIStorageCapacity,
  V1Lease,
  V1Node,
  V1ObjectMeta,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StorageClass,
  V1VolumeAttachment,
} from '@kubernetes/client-node';

/**
 * An API type as it travels over the wire: client-node's models declare timestamps as Date, but
 * the runtime passes JSON through untouched, so timestamps are RFC 3339 strings.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type ObjectMeta = Wire<V1ObjectMeta>;
export type Pod = Wire<V1Pod>;
export type Node = Wire<V1Node>;
export type PersistentVolume = Wire<V1PersistentVolume>;
export type PersistentVolumeClaim = Wire<V1PersistentVolumeClaim>;
export type StorageClass = Wire<V1StorageClass>;
export type CSINode = Wire<V1CSINode>;
export type CSIDriver = Wire<V1CSIDriver>;
export type CSIStorageCapacity = Wire<V1CSIStorageCapacity>;
export type VolumeAttachment = Wire<V1VolumeAttachment>;
export type Lease = Wire<V1Lease>;
export type Event = Wire<CoreV1Event>;
