import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { GiB, POOL_PARAMETER } from '@topovol/testing/csi-test-driver';

/** One driver name for every node: a per-node driver (TopoLVM, local disks) is one CSI driver deployed as a DaemonSet. */
export const DRIVER = 'capacity-bench.csi.topovol.dev';
/** The driver's topology key (NodeGetInfo, CSINode): one segment per node. */
export const TOPOLOGY_KEY = 'topology.capacity-bench.csi.topovol.dev/node';
/** Where the claims of the provisioned changes live. */
export const CLAIM_NAMESPACE = 'capacity-bench';
/** Free space of every pool when the run starts. */
export const INITIAL_BYTES = 100n * GiB;
/** Every volume of a change. */
export const VOLUME_BYTES = GiB;

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';

/**
 * per-class: each StorageClass has a pool of its own on every node (like TopoLVM device classes),
 * so a volume changes one class's figure. shared: all classes draw on one pool per node, so a
 * volume of one class changes every class's figure on that node.
 */
export type PoolLayout = 'per-class' | 'shared';

export const nodeName = (i: number): string => `cb-node-${String(i).padStart(3, '0')}`;
export const className = (j: number): string => `cb-class-${j}`;
export const segmentOf = (node: string): Record<string, string> => ({ [TOPOLOGY_KEY]: node });

/** The driver pool behind a class: the StorageClass parameter the test driver reads (POOL_PARAMETER), or the default pool. */
export function poolOf(layout: PoolLayout, cls: string): string {
  return layout === 'per-class' ? `pool-${cls}` : '';
}

/** The classes whose figure on a node a volume of `cls` changes. */
export function affectedClasses(layout: PoolLayout, cls: string, classes: readonly string[]): string[] {
  return layout === 'per-class' ? [cls] : [...classes];
}

export function storageClass(layout: PoolLayout, name: string): StorageClass {
  const pool = poolOf(layout, name);
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: DRIVER,
    // Capacity is only published (and used by the scheduler) for late binding (KEP-1472).
    volumeBindingMode: 'WaitForFirstConsumer',
    reclaimPolicy: 'Delete',
    ...(pool ? { parameters: { [POOL_PARAMETER]: pool } } : {}),
  };
}

/**
 * A claim as kube-scheduler and kube-controller-manager's binder leave it for a per-node
 * provisioner: the node chosen and the provisioner named, so exactly that node's
 * external-provisioner provisions it.
 */
export function claimOn(name: string, node: string, cls: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: CLAIM_NAMESPACE, annotations: { [SELECTED_NODE]: node, [STORAGE_PROVISIONER]: DRIVER } },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: String(VOLUME_BYTES) } } },
  };
}

/** A volume of the driver on one node that no provisioner made (static provisioning, an import, an admin's tool). */
export function outsideVolume(name: string, node: string, cls: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: String(VOLUME_BYTES) },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: cls,
      csi: { driver: DRIVER, volumeHandle: name },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: TOPOLOGY_KEY, operator: 'In', values: [node] }] }] } },
    },
  };
}
