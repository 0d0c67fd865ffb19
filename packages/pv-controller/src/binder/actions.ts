import type { EventType, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';

/**
 * What the binder wants done, planned by pure decision functions and carried out by the actuator.
 * Every action carries the object as it was seen: the actuator writes with that resourceVersion,
 * so a decision made on stale data fails with a conflict instead of overwriting a newer state.
 */
export type BinderAction =
  /** PV.spec.claimRef := claim (+ bound-by-controller), then PV phase Bound. */
  | { kind: 'bindVolume'; volume: PersistentVolume; claim: PersistentVolumeClaim; boundByController: boolean }
  /** Claim.spec.volumeName := volume, bind-completed (+ bound-by-controller), then claim status Bound. */
  | { kind: 'bindClaim'; claim: PersistentVolumeClaim; volume: PersistentVolume; boundByController: boolean }
  | { kind: 'volumePhase'; volume: PersistentVolume; phase: 'Available' | 'Bound' | 'Released' | 'Failed'; reason?: string; message?: string }
  | { kind: 'claimPhase'; claim: PersistentVolumeClaim; phase: 'Pending' | 'Bound' | 'Lost'; volume?: PersistentVolume }
  /** Removes a controller-made claimRef (the claim went to another volume). */
  | { kind: 'unbindVolume'; volume: PersistentVolume }
  | { kind: 'annotateClaim'; claim: PersistentVolumeClaim; set?: Record<string, string>; remove?: string[] }
  | { kind: 'setClaimClass'; claim: PersistentVolumeClaim; storageClassName: string }
  /** Nothing to write now; look at the claim again after this long (a grace period running). */
  | { kind: 'requeueAfter'; ms: number }
  | { kind: 'event'; target: PersistentVolume | PersistentVolumeClaim; type: EventType; reason: string; message: string };

export function event(target: PersistentVolume | PersistentVolumeClaim, type: EventType, reason: string, message: string): BinderAction {
  return { kind: 'event', target, type, reason, message };
}
