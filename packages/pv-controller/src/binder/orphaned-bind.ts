import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderWorld } from './binder-world.js';
import { freeVolumeHeldBack } from './deleting-claim.js';

/**
 * Topovol: why a claimRef the binder has just written on a free volume must be taken back, given
 * the claim as the server has it after the claim's own write failed (undefined: keep it).
 *
 * A binding is two objects written one after the other (upstream's bind: the volume, then the
 * claim), decided on the claim cache. When that cache is behind a delete, the volume is written for
 * a claim the server no longer has (or has under a new uid, or is deleting), and the claim's write
 * then fails. Upstream keeps the claimRef: syncVolume finds the claim gone and Releases the volume,
 * and with `Delete` its deleter deletes a static volume no claim ever used (docs/divergences.md,
 * "A binding whose claim went while it was written"). Taken back, the volume is Available again.
 * A claim that recorded the binding (`spec.volumeName`) keeps it, whatever its state.
 */
export function orphanedBind(volume: PersistentVolume, claimOnServer: PersistentVolumeClaim | undefined, world: BinderWorld): string | undefined {
  const ref = volume.spec?.claimRef;
  if (!ref) return undefined;
  if (!claimOnServer) return 'the claim is gone';
  if (claimOnServer.metadata?.uid !== ref.uid) return 'the claim was deleted and created again';
  const bound = claimOnServer.spec?.volumeName;
  if (bound === volume.metadata?.name) return undefined;
  if (bound) return `the claim is bound to volume ${bound}`;
  // A claim being deleted that a placed pod uses gets its volume, as upstream (deleting-claim.ts).
  if (claimOnServer.metadata?.deletionTimestamp && freeVolumeHeldBack(claimOnServer, world)) return 'the claim is being deleted';
  return undefined;
}
