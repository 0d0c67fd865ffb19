import type { Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment } from '@topovol/shared';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';

/** What this process saw of a claim while it was being provisioned (see provisioning-observation.ts). */
export interface ProvisioningObservation {
  /** The claim's selected node at the time. */
  node: string;
  /** The one pod using the claim, unscheduled, whose scheduling asked for the volume. */
  podUid: string;
  /** Its workload (controller, or the pod itself). */
  workloadUid: string;
}

/** The read-only view of the cluster the rollback decisions need (informer caches in production). */
export interface RollbackWorld {
  volume(name: string): PersistentVolume | undefined;
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  node(name: string): Node | undefined;
  /** Every node the cache holds. */
  nodes(): Node[];
  storageClass(name: string): StorageClass | undefined;
  /** Pods in the claim's namespace whose volumes reference it by name (any phase; ephemeral volumes included). */
  podsUsingClaim(namespace: string, name: string): Pod[];
  /** Whether a pod with this uid still exists. */
  podExists(uid: string): boolean;
  /** Names of nodes whose status.volumesInUse mentions the volume. */
  nodesUsingVolume(volume: PersistentVolume): string[];
  attachmentsOf(volumeName: string): VolumeAttachment[];
  /** ProvisioningFailed Events recorded on the claim (by its uid). */
  provisioningFailures(claim: PersistentVolumeClaim): Event[];
  /**
   * Whether the failure was recorded on a copy of the claim that had its current selected node
   * (by resourceVersion): only then may it be about that node (SelectionVersions).
   */
  failedSinceSelected(claim: PersistentVolumeClaim, failure: Event): boolean;
  /**
   * What this process saw of the claim's provisioning (by claim uid), if anything. Forgotten when
   * the pod watch has a gap (a relist), so it also says the claim's pods were watched since.
   */
  provisioningObserved(claimUid: string): ProvisioningObservation | undefined;
  /** Evidence left by a pod seen deleted after it was scheduled or ran, for the claim it used. */
  endedUse(namespace: string, claimName: string): string | undefined;
  /** The workload's rollbacks (ProvisioningRollback objects), newest first. */
  rollbacksOf(historyKey: string): ProvisioningRollback[];
  /** The rollbacks that re-created a claim of this name in this namespace, newest first. */
  rollbacksOfClaim(namespace: string, claimName: string): ProvisioningRollback[];
  now(): number;
  /** How long to wait for claims still undecided (perhaps still provisioning) before rolling back anyway. */
  graceMs: number;
  /** How long a pod must be seen ready to roll back on its node's state alone (--rollback-node-state-wait). */
  nodeStateDwellMs: number;
  /** Only volumes created this recently are marked unused: older ones were not seen provisioned. */
  markWindowMs: number;
  /** At most this many rollbacks per workload. */
  maxRollbacks: number;
  /** After the n-th rollback of a workload, wait backoffBaseMs × 2^(n-1) before another. */
  backoffBaseMs: number;
}
