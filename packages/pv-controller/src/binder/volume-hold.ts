import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
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

/**
 * The FailedBinding Warning for a claim, not Bound itself, that names a volume held for another
 * (heldForAnother), or undefined when the claim may have it. The holder is not named: it may be
 * another namespace's.
 */
export function heldRefusal(volume: PersistentVolume, claim: PersistentVolumeClaim, world: Pick<BinderWorld, 'claimsBoundTo'>): BinderAction | undefined {
  if (claim.status?.phase === 'Bound' || !heldForAnother(volume, claim, world)) return undefined;
  const name = volume.metadata?.name ?? '';
  return event(claim, 'Warning', Reasons.FailedBinding, `volume "${name}" is held for another claim that is Bound to it and names it; it is bound to no other claim while that claim is Bound`);
}
