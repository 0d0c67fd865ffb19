import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import type { VolumeCandidates } from './find-matching-volume.js';
import type { SelectedNodeIssue } from './selected-node-checks.js';

/** The read-only view of the cluster the binder's decisions need (informer caches in production). */
export interface BinderWorld extends VolumeCandidates {
  volume(name: string): PersistentVolume | undefined;
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  storageClass(name: string): StorageClass | undefined;
  defaultStorageClass(): StorageClass | undefined;
  node(name: string): Node | undefined;
  /**
   * Claims that name the volume in `spec.volumeName` and were recorded Bound to it (binder-indexes.ts,
   * claimBoundToVolume): whatever the volume says, it may hold their data, so no other claim takes it
   * from the free pool, and a volume of theirs that lost its claimRef keeps its phase until the
   * claim's sync binds it again.
   */
  claimsBoundTo(volumeName: string): PersistentVolumeClaim[];
  /** Pods in the claim's namespace whose volumes reference it (generic ephemeral volumes included). */
  podsUsingClaim(namespace: string, name: string): Pod[];
  /** Milliseconds since the epoch (injected so decisions stay pure). */
  now(): number;
  /** How long a selected-node must look stale before it is cleared; negative disables clearing. */
  staleSelectedNodeGraceMs: number;
  /** The selected-node problem this process last noted for the claim, with which node, and since when (see noteSelectedNodeIssue). */
  selectedNodeIssue(claim: PersistentVolumeClaim): { issue: SelectedNodeIssue; node: string; since: number } | undefined;
  /** The latest time the external provisioner reported working on the claim (Provisioning Events), if ever. */
  lastProvisioningActivity(claim: PersistentVolumeClaim): number | undefined;
  /**
   * How often this process saw the claim's selected node removed while it was unbound (the
   * provisioner giving the node back, e.g. after ResourceExhausted), and when last; undefined if never.
   */
  selectedNodeRemovals(claim: PersistentVolumeClaim): { count: number; last: number } | undefined;
}
