import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import type { BinderWorld } from './binder-world.js';
import { freeVolumeHeldBack } from './deleting-claim.js';

/**
 * Topovol: why a claimRef the binder has just written on a free volume must be taken back, given
 * the claim as the server has it after the claim's own write failed (undefined: keep it).
 *
 * A binding is two objects written one after the other (upstream's bind: the volume, then the
 * claim), decided on the claim cache. When that cache is behind a delete, the volume is written for
 * a claim the server no longer has (or has under a new uid, or is deleting), and the claim's write
 * then fails; or the process stops between the two writes and the claim goes meanwhile. Upstream
 * keeps the claimRef: syncVolume finds the claim gone and Releases the volume, and with `Delete` its
 * deleter deletes a static volume no claim ever used (docs/divergences.md, "A binding whose claim
 * went while it was written"). Taken back, the volume is Available again. A claim that recorded the
 * binding (`spec.volumeName`) keeps it, whatever its state.
 */
export function orphanedBind(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined, world: BinderWorld): string | undefined {
  if (!volume.spec?.claimRef) return undefined;
  const went = claimGoneOrRecreated(volume, claim);
  if (went || !claim) return went;
  const bound = claim.spec?.volumeName;
  if (bound === volume.metadata?.name) return undefined;
  if (bound) return `the claim is bound to volume ${bound}`;
  // A claim being deleted that a placed pod uses gets its volume, as upstream (deleting-claim.ts).
  if (claim.metadata?.deletionTimestamp && freeVolumeHeldBack(claim, world)) return 'the claim is being deleted';
  return undefined;
}

/**
 * Topovol: a claimRef a controller put on a free volume whose binding has not reached the claim:
 * the volume still `Available` (a phase only a binder writes, and only on a volume with no claim's
 * uid), its claimRef naming a claim by uid, marked bound-by-controller, and no provisioner's mark
 * (a volume kube-controller-manager's in-tree provisioning made carries bound-by-controller from its
 * creation, and is its claim's to release). Not a volume in no phase yet: one created again from a
 * dump of a used one (kubectl get -o yaml, GitOps, a migration) looks the same, its status dropped
 * by the API server.
 *
 * Topovol binds (actuator.ts) and kube-scheduler pre-binds (BindPodVolumes in
 * pkg/scheduler/framework/plugins/volumebinding/binder.go) writing such a claimRef while the volume
 * is Available, and its phase Bound before anything of the claim; a claim that may have been Bound
 * to the volume it names re-binds it phase first. So no claim was Bound to such a volume through
 * this claimRef, and no pod used it: the kubelet mounts only the volume of a Bound claim whose
 * claimRef names it (getPVCExtractPV and getPVSpec in its desired_state_of_world_populator.go).
 * kube-controller-manager's re-binding of a Bound claim writes the claimRef first; stopped there,
 * its volume reads as unfinished too, which is why a take-back keeps the claimRef's name.
 */
export function bindingUnfinished(volume: PersistentVolume): boolean {
  const ann = volume.metadata?.annotations ?? {};
  return volume.status?.phase === 'Available' && !!volume.spec?.claimRef?.uid && ann[ANN_BOUND_BY_CONTROLLER] !== undefined && ann[ANN_DYNAMICALLY_PROVISIONED] === undefined;
}

/**
 * A binding to `volume` that never reached `claim` (bindingUnfinished), which the claim cannot have
 * used either: as free for the claim as a volume with no claimRef.
 */
export function bindingNeverReached(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  return bindingUnfinished(volume) && !claimMayHaveBeenBound(claim);
}

/**
 * The take-back of an unfinished binding whose claim is gone or was created again under its name,
 * decided on the cache (the glue reads the claim on the server before the write:
 * verify-on-server.ts). The claimRef keeps its namespace and name and loses its uid: the volume is
 * reserved for a claim of that name, as a user's pre-binding, since nothing says whether the name
 * was there before the binding (an administrator's reservation of a Retained volume, whose data
 * must not go to any claim). A claim bound elsewhere, or being deleted, is left to upstream's paths
 * and to the claim's sync (decide-claim.ts holds the binding back). Undefined when none.
 */
export function takeBackUnfinished(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): (Extract<BinderAction, { kind: 'unbindVolume' }> & { takeBack: string }) | undefined {
  if (!bindingUnfinished(volume)) return undefined;
  const why = claimGoneOrRecreated(volume, claim);
  return why ? { kind: 'unbindVolume', volume, keepClaimRef: true, takeBack: why } : undefined;
}

/** Why the claim the volume's claimRef names no longer waits for it (gone, or created again), or undefined. */
export function claimGoneOrRecreated(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined): string | undefined {
  if (!claim) return 'the claim is gone';
  if (claim.metadata?.uid !== volume.spec?.claimRef?.uid) return 'the claim was deleted and created again';
  return undefined;
}

/**
 * The volumes a claim's plan takes from the free pool (no claimRef yet) for a claim that names no
 * volume: the only ones the claim's failed write may have orphaned and takeBackOrphaned may undo. A
 * claim that names its volume may have been Bound to it, and used it: that volume is never taken
 * back, whatever befalls the claim (upstream releases it).
 */
export function takenFromFreePool(actions: readonly BinderAction[], claim: PersistentVolumeClaim, world: BinderWorld): string[] {
  if (claim.spec?.volumeName || claimMayHaveBeenBound(claim)) return [];
  return actions.flatMap((a) => (a.kind === 'bindVolume' && !world.volume(a.volume.metadata!.name!)?.spec?.claimRef ? [a.volume.metadata!.name!] : []));
}

/**
 * Whether the claim may have been Bound to a volume, and a pod have used it: Bound or Lost now
 * (status, which only controllers write), or marked bind-completed.
 */
export function claimMayHaveBeenBound(claim: PersistentVolumeClaim): boolean {
  const phase = claim.status?.phase;
  return phase === 'Bound' || phase === 'Lost' || claim.metadata?.annotations?.[ANN_BIND_COMPLETED] !== undefined;
}
