import type { PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { ANN_SELECTED_NODE, LABEL_HOSTNAME, LABEL_REGION, LABEL_ZONE, NO_PROVISIONER } from '@topovol/shared';

// The tests' short names for the well-known names they use most.
export { ANN_SELECTED_NODE as SELECTED_NODE, LABEL_HOSTNAME as HOSTNAME, LABEL_ZONE as ZONE, LABEL_REGION as REGION, NO_PROVISIONER };

type PodSpec = NonNullable<Pod['spec']>;
type Affinity = NonNullable<PodSpec['affinity']>;

/** A WaitForFirstConsumer class (KEP-490): claims wait for a pod and the scheduler's choice. */
export function delayedClass(name: string, provisioner: string, parameters?: Record<string, string>): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner,
    volumeBindingMode: 'WaitForFirstConsumer',
    reclaimPolicy: provisioner === NO_PROVISIONER ? 'Retain' : 'Delete',
    ...(parameters ? { parameters } : {}),
  };
}

export function claim(ns: string, name: string, size: string, cls: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: cls },
  };
}

export interface PodOptions {
  labels?: Record<string, string>;
  affinity?: Affinity;
  /** Placed by hand, bypassing the scheduler (kubernetes/kubernetes#95767). */
  nodeName?: string;
}

/** A pod using the claims. No kubelet runs: it is scheduled (bound to a node) but never starts by itself. */
export function podWithClaims(ns: string, name: string, claims: readonly string[], o: PodOptions = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, ...(o.labels ? { labels: o.labels } : {}) },
    spec: {
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
      terminationGracePeriodSeconds: 0,
      volumes: claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
      ...(o.affinity ? { affinity: o.affinity } : {}),
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
    },
  };
}

/** Required (anti-)affinity to pods with these labels, per node (`kubernetes.io/hostname`). */
export function podAffinity(kind: 'podAffinity' | 'podAntiAffinity', labels: Record<string, string>): Affinity {
  return { [kind]: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: labels }, topologyKey: LABEL_HOSTNAME }] } };
}

/** A soft preference for nodes with this label value: steers the scheduler's choice among feasible nodes only. */
export function preferNodes(key: string, value: string): Affinity {
  return { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: { matchExpressions: [{ key, operator: 'In', values: [value] }] } }] } };
}

/** A pre-provisioned local volume on one node, as a local static provisioner creates it. */
export function localVolume(name: string, size: string, cls: string, node: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: cls,
      local: { path: `/mnt/disks/${name}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: LABEL_HOSTNAME, operator: 'In', values: [node] }] }] } },
    },
  };
}

/** The value of `key` the volume's node affinity requires (the node or zone it is on), if any. */
export function volumeTopology(pv: PersistentVolume, key: string): string | undefined {
  for (const term of pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? []) {
    const e = term.matchExpressions?.find((x) => x.key === key && x.operator === 'In');
    if (e?.values?.[0]) return e.values[0];
  }
  return undefined;
}
