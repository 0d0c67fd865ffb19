import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderWorld } from './binder-world.js';

/**
 * Whether another claim, recorded Bound to this volume, names it (BinderWorld.claimsBoundTo). Such a
 * volume may hold that claim's data: while its claimRef is missing (removed by hand, or a re-binding
 * stopped between its writes) the binder gives it to no other claim that is not Bound, neither from
 * the free pool nor to a claim that names it (docs/divergences.md, "A free-looking volume a Bound
 * claim names"). Naming a volume is open to anyone who may create claims, in any namespace. Not
 * covered: kube-scheduler's pre-binding of such a volume whose phase is Available (its own write).
 */
export function heldForAnother(volume: PersistentVolume, claim: PersistentVolumeClaim, world: Pick<BinderWorld, 'claimsBoundTo'>): boolean {
  const uid = claim.metadata?.uid;
  return world.claimsBoundTo(volume.metadata?.name ?? '').some((c) => c.metadata?.uid !== uid);
}

/** The claim's Event when the volume it names is held (the holder is not named: it may be another namespace's). */
export function heldMessage(volumeName: string): string {
  return `volume "${volumeName}" is held for another claim that is Bound to it and names it; it is bound to no other claim while that claim is Bound`;
}
