import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';

export const WARMUP_NAMESPACE = 'bench-warmup';

export const benchNamespace = (i: number): string => `bench-${i}`;

/**
 * Sizes vary a little (1000Mi..1400Mi in five steps) so the binder has to pick the smallest fit,
 * not just the first volume; claim i asks for exactly what volume i offers, so every claim fits.
 */
const sizeOf = (i: number): string => `${1000 + (i % 5) * 100}Mi`;

/** The smallest volume size: a claim asking for it fits every bench volume. */
export const SMALLEST_SIZE = sizeOf(0);

const pad = (i: number): string => String(i).padStart(6, '0');

/** The names benchVolume gives volumes 0..n-1. */
export const volumeNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `bench-pv-${pad(i)}`);

/** A class-less, Retain, hostPath volume: the static-provisioning case the binder matches. */
export function benchVolume(i: number, size = sizeOf(i), name = `bench-pv-${pad(i)}`): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      hostPath: { path: `/tmp/topovol-bench/${name}` },
    },
  };
}

/** A class-less claim (storageClassName ""), so no default class or provisioner is involved. */
export function benchClaim(i: number, namespaces: number, size = sizeOf(i), name = `bench-pvc-${pad(i)}`, namespace = benchNamespace(i % namespaces)): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: '',
    },
  };
}

/** The pair that proves a binder is up and synced before anything is timed; too small for any bench claim. */
export const warmupVolume = (): PersistentVolume => benchVolume(0, '1Mi', 'bench-warmup-pv');
export const warmupClaim = (): PersistentVolumeClaim => benchClaim(0, 1, '1Mi', 'bench-warmup-pvc', WARMUP_NAMESPACE);

/** A pod using claim i (no scheduler or kubelet runs: it stays Pending), so binders cache pods as in a cluster. */
export function benchPod(i: number, namespaces: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `bench-pod-${pad(i)}`, namespace: benchNamespace(i % namespaces) },
    spec: {
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
      terminationGracePeriodSeconds: 0,
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `bench-pvc-${pad(i)}` } }],
    },
  };
}
