import type { Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from '@topovol/shared';

/** The read-only view of the cluster the rollback decisions need (informer caches in production). */
export interface RollbackWorld {
  volume(name: string): PersistentVolume | undefined;
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  node(name: string): Node | undefined;
  /** Pods in the claim's namespace whose volumes reference it by name (any phase). */
  podsUsingClaim(namespace: string, name: string): Pod[];
  /** Names of nodes whose status.volumesInUse mentions the volume. */
  nodesUsingVolume(volume: PersistentVolume): string[];
  attachmentsOf(volumeName: string): VolumeAttachment[];
  /** ProvisioningFailed Events recorded on the claim (by its uid). */
  provisioningFailures(claim: PersistentVolumeClaim): Event[];
  now(): number;
  /** Wait this long after a pod is first seen stuck before rolling back (other claims may still be provisioning). */
  graceMs: number;
  /** Since when this process has seen the pod stuck (remembered from the first ask). */
  stuckSince(podKey: string): number;
  /** Only volumes created this recently are marked unused: older ones were not seen provisioned. */
  markWindowMs: number;
}
