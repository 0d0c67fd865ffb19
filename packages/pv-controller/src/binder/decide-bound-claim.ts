import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { accessModesSatisfied } from './check-volume-satisfies-claim.js';
import { claimClass, claimVolumeMode, volumeClass, volumeVolumeMode } from './claim-helpers.js';
import { claimStatusFor } from './claim-status.js';

/**
 * Topovol: what no bound pair can differ in, because neither object may change it once bound (the
 * size and the VolumeAttributesClass may: expansion and modification). Upstream re-binds a volume
 * without a claimRef to any claim that names it and carries bind-completed, which anyone who can
 * write claims can set: a claim of one class could take a volume of another (and its quota).
 */
function immutableMismatch(claim: PersistentVolumeClaim, volume: PersistentVolume): string | undefined {
  if (volumeClass(volume) !== claimClass(claim)) return 'storageClassName';
  if (volumeVolumeMode(volume) !== claimVolumeMode(claim)) return 'volumeMode';
  if (!accessModesSatisfied(claim, volume)) return 'accessModes';
  return undefined;
}

/**
 * A claim whose binding completed once (pv.kubernetes.io/bind-completed), as upstream's
 * syncBoundClaim: keep it Bound (re-binding a volume that lost its claimRef, if it could ever have
 * been this claim's: see immutableMismatch), or declare it Lost,
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
    const unfit = !ref ? immutableMismatch(claim, volume) : undefined;
    if (unfit) {
      return [event(claim, 'Warning', Reasons.VolumeMismatch, `Cannot bind PersistentVolume "${volumeName}" to this claim marked bind-completed: its ${unfit} does not match the claim's, so it was never bound to this claim`)];
    }
    if (!ref || ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace) {
      actions.push({ kind: 'bindVolume', volume, claim, boundByController: true });
    } else if (volume.status?.phase !== 'Bound') {
      actions.push({ kind: 'volumePhase', volume, phase: 'Bound' });
    }
    if (claimStatusFor(claim, 'Bound', volume)) actions.push({ kind: 'claimPhase', claim, phase: 'Bound', volume });
    return actions;
  }
  return lost(Reasons.ClaimMisbound, 'Two claims are bound to the same volume, this one is bound incorrectly');
}
