import type { PersistentVolume } from '@topovol/shared';
import type { BinderAction } from './actions.js';

/**
 * Past UNSETTLED_HOLD_MS (reconcile-binder.ts) a claim whose volume write got no answer, and whose
 * read-back the server refuses, is decided on the cache. `pending` is that volume while the cache
 * still shows it free and as it was when written: the write may have landed. A plan that binds
 * another volume then binds `pending` instead: the same write again, at the version it was made
 * against, so it lands if the first did not and fails its precondition if it did (upstream's single
 * claim worker retries the same volume until its informer shows the write). Taking another would
 * leave `pending` naming a claim bound elsewhere: unbound, or, provisioned with Delete, Released and
 * deleted.
 */
export function retryUnsettledVolume(actions: BinderAction[], pending: PersistentVolume | undefined): BinderAction[] {
  if (!pending) return actions;
  const bind = actions.find((a) => a.kind === 'bindVolume');
  if (!bind || bind.volume.metadata?.name === pending.metadata?.name) return actions;
  return actions.map((a) => (a.kind === 'bindVolume' ? { ...a, volume: pending, boundByController: true } : a.kind === 'bindClaim' ? { ...a, volume: pending } : a));
}
