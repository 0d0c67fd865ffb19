import { claimNamesOfPod } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { BinderWorld } from './binder-world.js';
import { isLivePod } from './selected-node-checks.js';

/**
 * Topovol: whether a free volume is held back from `claim`, which is being deleted (upstream's
 * syncUnboundClaim binds it). Once the claim goes, the volume is Released and, with `Delete`, its
 * data deleted: a static volume's, perhaps put there for whoever claims it. It is held back only
 * while no live pod that is already on a node uses the claim: kube-scheduler places no pod whose
 * claim is being deleted (podHasPVCs in its volumebinding plugin), but the kubelet starts one that
 * is placed (by hand or by another scheduler) while pvc-protection keeps the claim's finalizer for
 * it (getPVCExtractPV in the kubelet's desired_state_of_world_populator.go, since kubernetes
 * #130335), and such a pod gets its volume as upstream would give it, once the server's pods
 * confirm it (deletingClaimConfirmation).
 */
export function freeVolumeHeldBack(claim: PersistentVolumeClaim, world: BinderWorld): boolean {
  if (!claim.metadata?.deletionTimestamp) return false;
  return !placedPodUses(world.podsUsingClaim(claim.metadata.namespace ?? '', claim.metadata.name ?? ''), claim);
}

/** Some live pod already on a node names the claim in its volumes. */
export function placedPodUses(pods: readonly Pod[], claim: PersistentVolumeClaim): boolean {
  const name = claim.metadata?.name ?? '';
  return pods.some((p) => isLivePod(p) && !!p.spec?.nodeName && claimNamesOfPod(p).includes(name));
}

/**
 * The free volume `freeVolumeHeldBack` let go to a claim being deleted, marked to be confirmed on
 * the server's pods before it is written (verify-on-server.ts): the cache may still show a placed
 * pod that went, and the volume would then be Released once the claim goes, as if never held back.
 */
export function deletingClaimConfirmation(claim: PersistentVolumeClaim): { forDeletingClaim?: true } {
  return claim.metadata?.deletionTimestamp ? { forDeletingClaim: true } : {};
}
