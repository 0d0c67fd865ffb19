import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';

/** The read-only view of the cluster the binder's decisions need (informer caches in production). */
export interface BinderWorld {
  volume(name: string): PersistentVolume | undefined;
  /** Volumes that may match a claim of this class (unbound or pre-bound), any order. */
  candidateVolumes(storageClassName: string): Iterable<PersistentVolume>;
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  storageClass(name: string): StorageClass | undefined;
  defaultStorageClass(): StorageClass | undefined;
  node(name: string): Node | undefined;
  /** Pods in the claim's namespace whose volumes reference it. */
  podsUsingClaim(namespace: string, name: string): Pod[];
}
