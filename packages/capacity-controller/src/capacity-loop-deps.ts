import type { CSINode, CSIStorageCapacity, Event, EventRecorder, Informer, KubeClient, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, StorageClass, WorkQueue } from '@topovol/shared';
import type { CapacityKey } from './capacity-key.js';
import type { CapacityObjectWriter } from './objects/object-actuator.js';
import type { CapacityStatusWriter } from './status/index.js';

/**
 * The narrow views the capacity loop takes of its collaborators: only what it calls, so that a
 * unit test can hand it in-memory fakes (test/unit/capacity-fakes.ts) while the real objects
 * still fit unchanged.
 */

/** What the loop reads of an informer: its cache, its events and one index. */
export type InformerView<T extends KubeObject> = Pick<Informer<T>, 'cache' | 'addEventHandler' | 'addIndex'>;

export interface CapacityInformers {
  nodes: InformerView<Node>;
  csiNodes: InformerView<CSINode>;
  classes: InformerView<StorageClass>;
  volumes: InformerView<PersistentVolume>;
  objects: InformerView<CSIStorageCapacity>;
  /** Claims and ProvisioningFailed Events: a failed provisioning refreshes the figure it trusted. */
  claims: InformerView<PersistentVolumeClaim>;
  failures: InformerView<Event>;
}

/** The writes of CSIStorageCapacity objects (ObjectActuator) and the CSIDriver read of an Unimplemented report. */
export type CapacityLoopClient = Pick<KubeClient, 'get'> & CapacityObjectWriter;

/** The loop only adds keys; the controller that owns the queue takes them. */
export type CapacityQueue = Pick<WorkQueue<CapacityKey>, 'add'>;

export type CapacityStatusPublisher = Pick<CapacityStatusWriter, 'publish' | 'pruneExpired'>;

export type CapacityEvents = Pick<EventRecorder, 'event'>;
