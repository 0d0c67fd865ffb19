import { ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import type { BinderWorld } from './binder-world.js';
import { isUnclaimedPhase } from './check-volume-satisfies-claim.js';
import { freeVolumeHeldBack } from './deleting-claim.js';

/**
 * Topovol: why a claimRef written on a free volume must be taken back, given the claim it names
 * (undefined: keep it). `heldBack` says whether a claim being deleted may not take a free volume
 * (freeVolumeHeldBack, on the pods the caller knows).
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
export function orphanedBind(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined, heldBack: (claim: PersistentVolumeClaim) => boolean): string | undefined {
  const ref = volume.spec?.claimRef;
  if (!ref) return undefined;
  if (!claim) return 'the claim is gone';
  if (claim.metadata?.uid !== ref.uid) return 'the claim was deleted and created again';
  const bound = claim.spec?.volumeName;
  if (bound === volume.metadata?.name) return undefined;
  if (bound) return `the claim is bound to volume ${bound}`;
  // A claim being deleted that a placed pod uses gets its volume, as upstream (deleting-claim.ts).
  if (claim.metadata?.deletionTimestamp && heldBack(claim)) return 'the claim is being deleted';
  return undefined;
}

/**
 * Topovol: a claimRef a controller put on a free volume for a claim that named no volume, whose
 * binding has not reached the claim: the volume's phase still that of a free one (Available, or
 * not yet written), the claimRef naming a claim by uid and marked bound-by-controller, and no
 * provisioner's mark (a volume kube-controller-manager's in-tree provisioning made carries
 * bound-by-controller from its creation, and is its claim's to release).
 *
 * The binders (this one; kube-controller-manager's bind() in
 * pkg/controller/volume/persistentvolume/pv_controller.go) and kube-scheduler's pre-binding
 * (BindPodVolumes in the volumebinding plugin) write such a claimRef while the volume is free, and
 * the volume's phase Bound before anything of the claim. A claim that already names the volume is
 * re-bound phase first (actuator.ts). So no claim was ever Bound to such a volume, and no pod can
 * have used it: the kubelet mounts only the volume of a Bound claim whose claimRef names it
 * (getPVCExtractPV and getPVSpec in its desired_state_of_world_populator.go).
 */
export function bindingUnfinished(volume: PersistentVolume): boolean {
  const ann = volume.metadata?.annotations ?? {};
  return isUnclaimedPhase(volume) && !!volume.spec?.claimRef?.uid && ann[ANN_BOUND_BY_CONTROLLER] !== undefined && ann[ANN_DYNAMICALLY_PROVISIONED] === undefined;
}

/**
 * The take-back of an unfinished binding whose claim went (gone, created again, bound elsewhere, or
 * being deleted with no placed pod), decided on the cache: the glue reads the claim on the server
 * before the write (verify-on-server.ts). Undefined when the binding stands.
 */
export function takeBackUnfinished(volume: PersistentVolume, claim: PersistentVolumeClaim | undefined, world: BinderWorld): BinderAction | undefined {
  if (!bindingUnfinished(volume)) return undefined;
  const why = orphanedBind(volume, claim, (c) => freeVolumeHeldBack(c, world));
  return why ? { kind: 'unbindVolume', volume, keepClaimRef: false, takeBack: why } : undefined;
}

/**
 * The volumes a claim's plan takes from the free pool (no claimRef yet) for a claim that names no
 * volume: the only ones the claim's failed write may have orphaned and takeBackOrphaned may undo. A
 * claim that names its volume may have been Bound to it, and used it: that volume is never taken
 * back, whatever befalls the claim (upstream releases it).
 */
export function takenFromFreePool(actions: readonly BinderAction[], claim: PersistentVolumeClaim, world: BinderWorld): string[] {
  if (claim.spec?.volumeName || claim.status?.phase === 'Bound' || claim.status?.phase === 'Lost') return [];
  return actions.flatMap((a) => (a.kind === 'bindVolume' && !world.volume(a.volume.metadata!.name!)?.spec?.claimRef ? [a.volume.metadata!.name!] : []));
}
