import type { EventType, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import type { ClaimPhase } from './claim-status.js';
import type { SelectedNodeIssue } from './selected-node-checks.js';

/**
 * What must still hold on the server, read live (verify-on-server.ts), before the binder removes a
 * claim's selected-node: a cache that lags (a node not yet seen, labels or pods not yet updated)
 * must never be the reason it goes.
 */
export type SelectedNodeProblem =
  | { issue: 'gone'; node: string }
  | { issue: 'notAllowed'; node: string; allowedTopologies: NonNullable<StorageClass['allowedTopologies']> }
  | { issue: 'noConsumer'; node: string };

/**
 * A selected-node problem as its removal must find it on the server, and `quietSince` (ms since the
 * epoch): no `Provisioning` Event of the claim's provisioner may be newer than that there either
 * (-Infinity: none at all). The decision read both from caches; an Events watch that lags would
 * otherwise hide a CreateVolume under way.
 */
export type SelectedNodeConfirmation = SelectedNodeProblem & { quietSince: number };

/**
 * The pod placed with spec.nodeName (bypassing the scheduler) that a binding or a selected node is
 * planned for: read live before the write (verify-on-server.ts), so that a pod the cache still has
 * after its deletion never pins the claim's volume to its old node.
 */
export interface PlacedPodConfirmation {
  namespace: string;
  name: string;
  uid: string;
  nodeName: string;
}

/**
 * What the binder wants done, planned by pure decision functions and carried out by the actuator.
 * Every action carries the object as it was seen: the actuator writes with that resourceVersion,
 * so a decision made on stale data fails with a conflict instead of overwriting a newer state.
 */
export type BinderAction =
  /**
   * PV.spec.claimRef := claim (+ bound-by-controller), then PV phase Bound. `forDeletingClaim`: a
   * free volume for a claim being deleted, written only once the server shows a live pod on a node
   * using the claim (deleting-claim.ts, verify-on-server.ts).
   */
  | { kind: 'bindVolume'; volume: PersistentVolume; claim: PersistentVolumeClaim; boundByController: boolean; forPlacedPod?: PlacedPodConfirmation; forDeletingClaim?: true }
  /** Claim.spec.volumeName := volume, bind-completed (+ bound-by-controller), then claim status Bound. */
  | { kind: 'bindClaim'; claim: PersistentVolumeClaim; volume: PersistentVolume; boundByController: boolean }
  /** Released is written only once the server confirms the claim is gone or bound elsewhere (verify-on-server.ts). */
  | { kind: 'volumePhase'; volume: PersistentVolume; phase: 'Available' | 'Bound' | 'Released' | 'Failed'; message?: string }
  | { kind: 'claimPhase'; claim: PersistentVolumeClaim; phase: ClaimPhase; volume?: PersistentVolume }
  /**
   * Undoes a binding the claim does not share (upstream's unbindVolume), then phase Available: a
   * claimRef the controller made is removed; a user's pre-binding keeps its name and loses its uid.
   * With `takeBack` (why): an unfinished binding whose claim went (orphaned-bind.ts), written only
   * once the server's claim confirms it (verify-on-server.ts).
   */
  | { kind: 'unbindVolume'; volume: PersistentVolume; keepClaimRef: boolean; takeBack?: string }
  | { kind: 'annotateClaim'; claim: PersistentVolumeClaim; set?: Record<string, string>; remove?: string[]; confirm?: SelectedNodeConfirmation; forPlacedPod?: PlacedPodConfirmation }
  | { kind: 'setClaimClass'; claim: PersistentVolumeClaim; storageClassName: string }
  /** Annotations and finalizers of a volume (CSI migration bookkeeping). */
  | { kind: 'updateVolumeMeta'; volume: PersistentVolume; set?: Record<string, string>; remove?: string[]; removeFinalizers?: string[] }
  /** Nothing to write now; look at the claim again after this long (a grace period running). */
  | { kind: 'requeueAfter'; ms: number }
  /** Remember in memory (no write) since when a selected-node problem has been seen with that node; undefined forgets. */
  | { kind: 'noteSelectedNodeIssue'; claim: PersistentVolumeClaim; issue: SelectedNodeIssue | undefined; node: string; at: number }
  | { kind: 'event'; target: PersistentVolume | PersistentVolumeClaim; type: EventType; reason: string; message: string };

export function event(target: PersistentVolume | PersistentVolumeClaim, type: EventType, reason: string, message: string): BinderAction {
  return { kind: 'event', target, type, reason, message };
}
