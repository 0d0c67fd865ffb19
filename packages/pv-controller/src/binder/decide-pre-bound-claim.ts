import { ANN_BOUND_BY_CONTROLLER } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { pendingStatus } from './claim-pending.js';
import { volumeMismatch } from './check-volume-satisfies-claim.js';
import { deletingClaimConfirmation, freeVolumeHeldBack } from './deleting-claim.js';
import { isPreBoundTo } from './find-matching-volume.js';
import { bindingNeverReached } from './orphaned-bind.js';
import { heldRefusal } from './volume-hold.js';

/**
 * A claim naming its volume (spec.volumeName, by a user or a bind that did not finish), as the
 * volumeName branch of upstream's syncUnboundClaim: wait for a volume that does not exist yet; bind
 * a free one that satisfies the claim (checkVolumeSatisfyClaim) or say why not; finish a binding
 * the volume already points back to; refuse a volume bound to another claim.
 */
export function decidePreBoundClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const volumeName = claim.spec!.volumeName!;
  const volume = world.volume(volumeName);
  if (!volume) return pendingStatus(claim);
  const claimBoundByController = claim.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] !== undefined;
  const bindVolume = { kind: 'bindVolume', volume, claim, boundByController: !volume.spec?.claimRef } as const;
  const bindClaim = { kind: 'bindClaim', claim, volume, boundByController: claimBoundByController } as const;
  const bind: BinderAction[] = [bindVolume, bindClaim];
  // Topovol: a volume free for the claim is not given to one being deleted that no placed pod uses
  // (deleting-claim.ts), and given to one a placed pod uses once the server's pods confirm that pod.
  const bindFree = (): BinderAction[] => (freeVolumeHeldBack(claim, world) ? pendingStatus(claim) : [{ ...bindVolume, ...deletingClaimConfirmation(claim) }, bindClaim]);
  if (!volume.spec?.claimRef) {
    // Topovol: not a volume another claim was bound to and may have written (volume-hold.ts),
    // unless this claim is Bound to it too; upstream binds it to whichever claim's sync comes first.
    const held = heldRefusal(volume, claim, world);
    if (held) return [held, ...pendingStatus(claim)];
    // Topovol: a claim Bound to it (its bind-completed removed by hand) gets back the volume it may
    // have written, as decideBoundClaim does: no fit check (it may be mid-expansion), no hold for a
    // claim being deleted, nor the server's check of one. Written Pending or refused on every retry,
    // it would end the volume's hold (volume-hold.ts) and let another claim have its data.
    if (claim.status?.phase === 'Bound') return bind;
    const why = volumeMismatch(claim, volume);
    if (why) return [event(claim, 'Warning', Reasons.VolumeMismatch, `Cannot bind to requested volume "${volumeName}": ${why}`), ...pendingStatus(claim)];
    // Naming a volume is how an existing data volume is attached: held back as any free volume.
    return bindFree();
  }
  if (isPreBoundTo(volume, claim)) {
    // Topovol: a binding to it that never reached this claim (a stop after the volume's claimRef,
    // by either binder) is completed as a free volume is given (bindFree); held back, its volume is
    // taken back once the claim goes (decide-volume.ts). Completed for a claim being deleted, it
    // would be Released and, with Delete, deleted, though no claim was ever Bound to it. A claim
    // that may have been Bound to it re-binds it as ever.
    return bindingNeverReached(volume, claim) ? bindFree() : bind;
  }
  const refused = event(claim, 'Warning', Reasons.FailedBinding, `volume "${volumeName}" already bound to a different claim.`);
  // A claim the controller bound that lost its bind-completed mark: upstream reports it and retries
  // without touching the status.
  return claimBoundByController ? [refused] : [refused, ...pendingStatus(claim)];
}
