import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { claimClass } from './claim-helpers.js';

// The binder's informer indexes. Module functions, not closures made per set-up: addIndex accepts
// an index added again (a second loop, a restarted one) only as the same function.

/** Claims not yet bound to a volume, by storage class: those a new volume of the class may satisfy. */
export const unboundClaimByClass = (c: PersistentVolumeClaim): string[] => (c.spec?.volumeName ? [] : [claimClass(c)]);

/**
 * Claims that name a volume (`volumeName`) and are not Bound to it yet, by that volume's name: the
 * volume's own events concern them (it appeared, or its claimRef was freed). Upstream's binder
 * leaves such a claim to its next periodic re-sync.
 */
export const claimWaitingForVolume = (c: PersistentVolumeClaim): string[] => (c.spec?.volumeName && c.status?.phase !== 'Bound' ? [c.spec.volumeName] : []);

/**
 * Claims a binder recorded Bound to the volume they name, by its name (BinderWorld.claimsBoundTo).
 * By the phase Bound only, which a binder writes once it has bound the volume to the claim: the
 * `pv.kubernetes.io/bind-completed` annotation is anyone's who may write claims, and a tenant can
 * have a claim made Lost (naming a volume that is missing or another's, with that annotation); either
 * would let it hold a free volume back from every other claim.
 */
export const claimBoundToVolume = (c: PersistentVolumeClaim): string[] => (c.spec?.volumeName && c.status?.phase === 'Bound' ? [c.spec.volumeName] : []);

export function claimBySelectedNode(c: PersistentVolumeClaim): string[] {
  const n = c.metadata?.annotations?.[ANN_SELECTED_NODE];
  return n ? [n] : [];
}

export const podByNodeName = (p: Pod): string[] => (p.spec?.nodeName ? [p.spec.nodeName] : []);
