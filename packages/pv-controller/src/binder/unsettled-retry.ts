import { ANN_BIND_COMPLETED } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import { findMatchingVolume } from './find-matching-volume.js';

/**
 * Past UNSETTLED_HOLD_MS (reconcile-binder.ts) a claim whose volume write got no answer, and whose
 * read-back the server refuses, is decided on the cache. `pending` is that volume while the cache
 * still shows it free and as it was when written: the write may have landed. A plan that takes
 * another free volume from the pool then binds `pending` instead: the same write again, at the
 * version it was made against, so it lands if the first did not and fails its precondition if it
 * did (upstream's single claim worker retries the same volume until its informer shows the write).
 * Taking another would leave `pending` naming a claim bound elsewhere: unbound, or, provisioned
 * with Delete, Released and deleted.
 *
 * Only there: a claim that names a volume (or carries bind-completed) is decided as it says; a claim
 * being deleted, or a binding for a pod placed on a node, has checks of its own the swap would skip;
 * a volume pre-bound to the claim is the claim's own; and `pending` must still satisfy the claim.
 * Otherwise the plan stands as decided.
 */
export function retryUnsettledVolume(actions: BinderAction[], claim: PersistentVolumeClaim, pending: PersistentVolume | undefined): BinderAction[] {
  if (!pending) return actions;
  const bind = actions.find((a): a is Extract<BinderAction, { kind: 'bindVolume' }> => a.kind === 'bindVolume');
  if (!bind || bind.volume.metadata?.name === pending.metadata?.name) return actions;
  if (claim.spec?.volumeName || claim.metadata?.annotations?.[ANN_BIND_COMPLETED] !== undefined || claim.metadata?.deletionTimestamp) return actions;
  if (bind.forPlacedPod || bind.forDeletingClaim || bind.volume.spec?.claimRef) return actions;
  // The search's own tests on this one volume (size, class, modes, selector, affinity, phase).
  if (findMatchingVolume(claim, [pending], { delayBinding: false }) !== pending) return actions;
  return actions.map((a) => (a.kind === 'bindVolume' ? { ...a, volume: pending, boundByController: true } : a.kind === 'bindClaim' ? { ...a, volume: pending } : a));
}
