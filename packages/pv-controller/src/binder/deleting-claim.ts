import type { PersistentVolumeClaim } from '@topovol/shared';
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
 * #130335), and such a pod gets its volume as upstream would give it.
 */
export function freeVolumeHeldBack(claim: PersistentVolumeClaim, world: BinderWorld): boolean {
  if (!claim.metadata?.deletionTimestamp) return false;
  const pods = world.podsUsingClaim(claim.metadata.namespace ?? '', claim.metadata.name ?? '');
  return !pods.some((p) => isLivePod(p) && !!p.spec?.nodeName);
}
