import type { PersistentVolume } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, Reasons } from './annotations.js';
import type { BinderWorld } from './binder-world.js';

/**
 * The binder's decision for one volume, mirroring upstream's syncVolume: phases, release when the
 * claim is gone, and reclaim. Topovol never deletes a volume itself: Delete is left to the external
 * deleter named by pv.kubernetes.io/provisioned-by (seed 003); anything else ends in Failed.
 */
export function decideVolume(volume: PersistentVolume, world: BinderWorld): BinderAction[] {
  if (volume.metadata?.deletionTimestamp) return [];
  const phase = volume.status?.phase;
  const ref = volume.spec?.claimRef;
  if (!ref) return phase === 'Available' ? [] : [{ kind: 'volumePhase', volume, phase: 'Available' }];
  // Pre-bound by name only: available to exactly that claim, which the claim's sync will bind.
  if (!ref.uid) return phase === 'Available' ? [] : [{ kind: 'volumePhase', volume, phase: 'Available' }];

  const claim = world.claim(ref.namespace ?? '', ref.name ?? '');
  if (!claim || claim.metadata?.uid !== ref.uid) return reclaim(volume);

  const claimVolume = claim.spec?.volumeName ?? '';
  if (claimVolume === '' || claimVolume === volume.metadata?.name) {
    // Either fully bound, or pre-bound by us or the scheduler and the claim side is in progress.
    return phase === 'Bound' ? [] : [{ kind: 'volumePhase', volume, phase: 'Bound' }];
  }
  // The claim went to another volume: undo a claimRef we (or the scheduler) made; a user's stays.
  if (volume.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] !== undefined) return [{ kind: 'unbindVolume', volume }];
  return [];
}

function reclaim(volume: PersistentVolume): BinderAction[] {
  const phase = volume.status?.phase;
  if (phase === 'Failed') return [];
  // Released first: the actuator confirms on the server that the claim is really gone.
  const actions: BinderAction[] = phase === 'Released' ? [] : [{ kind: 'volumePhase', volume, phase: 'Released' }];
  const policy = volume.spec?.persistentVolumeReclaimPolicy ?? 'Retain';
  const name = volume.metadata?.name ?? '';
  switch (policy) {
    case 'Retain':
      return actions;
    case 'Delete':
      // Dynamically provisioned: the provisioner that created it deletes it (seed 003).
      if (volume.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED]) return actions;
      return [
        ...actions,
        { kind: 'volumePhase', volume, phase: 'Failed', reason: Reasons.VolumeFailedDelete, message: 'no external provisioner owns this volume' },
        event(volume, 'Warning', Reasons.VolumeFailedDelete, `error getting deleter volume plugin for volume "${name}": no deletable volume plugin matched`),
      ];
    case 'Recycle':
      return [
        ...actions,
        { kind: 'volumePhase', volume, phase: 'Failed', reason: Reasons.VolumeFailedRecycle, message: 'No recycler plugin found for the volume!' },
        event(volume, 'Warning', Reasons.VolumeFailedRecycle, 'No recycler plugin found for the volume!'),
      ];
    default:
      return [
        ...actions,
        { kind: 'volumePhase', volume, phase: 'Failed', reason: Reasons.VolumeUnknownReclaimPolicy, message: 'Volume has unrecognized PersistentVolumeReclaimPolicy' },
        event(volume, 'Warning', Reasons.VolumeUnknownReclaimPolicy, 'Volume has unrecognized PersistentVolumeReclaimPolicy'),
      ];
  }
}
