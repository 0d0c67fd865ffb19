import { ANN_BIND_COMPLETED } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { volumeMismatch } from './check-volume-satisfies-claim.js';
import { claimStatusFor } from './claim-status.js';
import { deletingClaimConfirmation, freeVolumeHeldBack } from './deleting-claim.js';
import { heldRefusal } from './volume-hold.js';

/**
 * A claim whose binding completed once (pv.kubernetes.io/bind-completed), as upstream's
 * syncBoundClaim: keep it Bound (re-binding a volume that lost its claimRef; for a claim not Bound
 * now, Lost included, only one that satisfies it), or declare it Lost,
 * once, with a Warning, when its volume is gone or belongs to another claim. Lost clears the
 * volume's access modes and capacity from the claim's status.
 */
export function decideBoundClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const lost = (reason: string, message: string): BinderAction[] =>
    claim.status?.phase === 'Lost' ? [] : [{ kind: 'claimPhase', claim, phase: 'Lost' }, event(claim, 'Warning', reason, message)];
  const volumeName = claim.spec?.volumeName;
  if (!volumeName) return lost(Reasons.ClaimLost, 'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!');
  const volume = world.volume(volumeName);
  if (!volume) return lost(Reasons.ClaimLost, 'Bound claim has lost its PersistentVolume. Data on the volume is lost!');
  const ref = volume.spec?.claimRef;
  if (!ref || ref.uid === claim.metadata?.uid) {
    // Unbound volume (our PV write was lost or undone), or all well: bind() writes only what differs.
    const actions: BinderAction[] = [];
    // Topovol: upstream re-binds any such volume to a claim carrying bind-completed, an annotation
    // anyone who may write claims can set. A claim Bound now (status, which only controllers write)
    // is re-bound as upstream; any other gets the checks of a claim naming a volume, so that it
    // cannot take a free volume of another class, mode or size. Lost is no proof of an earlier
    // binding: a claim given the annotation by hand and naming a missing volume becomes Lost too.
    // Nor one held for another claim Bound to it (volume-hold.ts).
    const held = ref ? undefined : heldRefusal(volume, claim, world);
    if (held) return [held];
    const unfit = !ref && claim.status?.phase !== 'Bound' ? volumeMismatch(claim, volume) : undefined;
    if (unfit) {
      return [event(claim, 'Warning', Reasons.VolumeMismatch, `Cannot bind to requested volume "${volumeName}": ${unfit} (the claim carries ${ANN_BIND_COMPLETED} but is not Bound)`)];
    }
    // Nor a free volume for such a claim being deleted that no placed pod uses (deleting-claim.ts).
    const free = !ref && claim.status?.phase !== 'Bound';
    if (free && freeVolumeHeldBack(claim, world)) return [];
    if (!ref || ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace) {
      actions.push({ kind: 'bindVolume', volume, claim, boundByController: true, ...(free ? deletingClaimConfirmation(claim) : {}) });
    } else if (volume.status?.phase !== 'Bound') {
      actions.push({ kind: 'volumePhase', volume, phase: 'Bound' });
    }
    if (claimStatusFor(claim, 'Bound', volume)) actions.push({ kind: 'claimPhase', claim, phase: 'Bound', volume });
    return actions;
  }
  return lost(Reasons.ClaimMisbound, 'Two claims are bound to the same volume, this one is bound incorrectly');
}
