import type { PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';

/** A WaitForFirstConsumer class of pre-provisioned local volumes: the scheduler chooses, the binder completes. */
export const DELAYED_CLASS = 'bench-local-wffc';
export const DELAYED_NAMESPACE = 'bench-delayed';

export const nodeName = (i: number): string => `bench-node-${String(i).padStart(3, '0')}`;
const pad = (i: number): string => String(i).padStart(6, '0');
export const delayedClaimName = (i: number): string => `data-${pad(i)}`;

export function delayedClass(): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: DELAYED_CLASS },
    provisioner: 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'WaitForFirstConsumer',
    reclaimPolicy: 'Retain',
  };
}

/** Volume i: a local volume on node (i mod nodes), as a local-static-provisioner would publish it. */
export function localVolume(i: number, nodes: number): PersistentVolume {
  const name = `bench-local-pv-${pad(i)}`;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: DELAYED_CLASS,
      local: { path: `/mnt/disks/${name}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName(i % nodes)] }] }] } },
    },
  };
}

export function delayedClaim(i: number): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: delayedClaimName(i), namespace: DELAYED_NAMESPACE },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: DELAYED_CLASS },
  };
}

/** A pod using claim i; no kubelet runs, so once scheduled it never starts (nothing here needs it to). */
export function delayedPod(i: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `app-${pad(i)}`, namespace: DELAYED_NAMESPACE },
    spec: {
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '1m', memory: '1Mi' } } }],
      terminationGracePeriodSeconds: 0,
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: delayedClaimName(i) } }],
    },
  };
}

/**
 * kube-scheduler's configuration: its client unthrottled like the binders' (the default 50 qps
 * would make the scheduler's own writes the bottleneck of a 1,000-pod burst), default profile.
 */
export function schedulerConfig(kubeconfig: string, qps: number, burst: number): string {
  return [
    'apiVersion: kubescheduler.config.k8s.io/v1',
    'kind: KubeSchedulerConfiguration',
    'leaderElection:',
    '  leaderElect: false',
    'clientConnection:',
    `  kubeconfig: ${JSON.stringify(kubeconfig)}`,
    `  qps: ${qps}`,
    `  burst: ${burst}`,
    '',
  ].join('\n');
}
