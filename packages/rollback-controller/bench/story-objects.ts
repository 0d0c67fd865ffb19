import type { PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';

/** The CSI driver both nodes run (one instance per node, each serving that node's storage). */
export const DRIVER = 'rollback-bench.csi.topovol.dev';
/** The driver's topology key: one segment per node, as a node-local driver reports it. */
export const TOPOLOGY_KEY = 'topology.rollback-bench.csi.topovol.dev/node';
export const NODE_A = 'rb-node-a';
export const NODE_B = 'rb-node-b';
/** Where the external-provisioners publish their CSIStorageCapacity objects. */
export const CAPACITY_NAMESPACE = 'rollback-bench-capacity';

export const CLAIMS = ['data-0', 'data-1'] as const;
export const POD = 'app';
export const CLAIM_SIZE = '1Gi';
export const CLAIM_BYTES = 1n * GiB;

/**
 * Free space per node. Node a's capacity was published while it had 10Gi; then something outside
 * Kubernetes took all but room for one claim, and the publisher only notices on its next poll.
 * The scheduler, seeing 10Gi on a and 3Gi on b, prefers a (its StorageCapacityScoring, beta and on
 * by default in v1.37, favours the node with the most free space) and checks each claim against
 * the capacity on its own, so both seem to fit. Node b really has room for both.
 */
export const PUBLISHED_A = 10n * GiB;
export const REAL_A = CLAIM_BYTES;
export const FREE_B = 3n * GiB;

export function storageClass(name: string): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: DRIVER,
    volumeBindingMode: 'WaitForFirstConsumer',
    reclaimPolicy: 'Delete',
  };
}

export function claim(ns: string, name: string, cls: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: CLAIM_SIZE } }, storageClassName: cls },
  };
}

/** A bare pod with both claims; no kubelet runs, so it is scheduled (bound to a node) but never starts. */
export function pod(ns: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: POD, namespace: ns },
    spec: {
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
      terminationGracePeriodSeconds: 0,
      volumes: CLAIMS.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
    },
  };
}

/** The node a provisioned volume is on, from the node affinity external-provisioner writes. */
export function volumeNode(pv: PersistentVolume): string | undefined {
  for (const term of pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? []) {
    const e = term.matchExpressions?.find((x) => x.key === TOPOLOGY_KEY && x.operator === 'In');
    if (e?.values?.[0]) return e.values[0];
  }
  return undefined;
}

/** What a kubelet reports in Node.status.volumesInUse for a mounted CSI volume. */
export function volumeInUseEntry(pv: PersistentVolume): string {
  return `kubernetes.io/csi/${pv.spec?.csi?.driver ?? DRIVER}^${pv.spec?.csi?.volumeHandle ?? ''}`;
}
