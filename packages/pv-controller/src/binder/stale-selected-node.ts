import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { BinderWorld } from './binder-world.js';

export type StaleVerdict =
  /** A pod may still need the selected node, or we cannot tell: leave the annotation alone. */
  | { stale: false; recheckAfterMs?: undefined }
  /** Looks stale, but not for long enough yet: look again later. */
  | { stale: false; recheckAfterMs: number }
  | { stale: true; why: string };

const isLive = (p: Pod): boolean => !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

/**
 * kubernetes #112347: the scheduler set selected-node for a pod that was then deleted or
 * preempted and placed elsewhere; the annotation stays and pins the claim's provisioning to a node
 * no consumer is going to. It is stale when no live pod using the claim is either unscheduled (it
 * may be the scheduler's current attempt) or placed on that node, and that has been so for the
 * grace period, and the external provisioner has shown no activity on the claim (a `Provisioning`
 * Event, emitted at every attempt) for the grace period either: clearing it must never cut into a
 * provisioning that is under way (sig-storage-lib-external-provisioner keeps retrying in the
 * background after a CreateVolume timeout). The caller has already ruled out a volume pre-bound
 * to the claim (provisioning that finished).
 */
export function staleSelectedNode(claim: PersistentVolumeClaim, selected: string, world: BinderWorld): StaleVerdict {
  const ns = claim.metadata?.namespace ?? '';
  const name = claim.metadata?.name ?? '';
  const consumers = world.podsUsingClaim(ns, name).filter(isLive);
  if (consumers.some((p) => !p.spec?.nodeName || p.spec.nodeName === selected)) return { stale: false };
  const grace = world.staleSelectedNodeGraceMs;
  if (!(grace >= 0)) return { stale: false };
  const now = world.now();
  const since = Math.max(world.consumerlessSince(ns, name), world.lastProvisioningActivity(claim) ?? -Infinity);
  const left = since + grace - now;
  if (left > 0) return { stale: false, recheckAfterMs: left };
  const elsewhere = consumers.map((p) => `${p.metadata?.name} on ${p.spec?.nodeName}`);
  return {
    stale: true,
    why: elsewhere.length > 0 ? `its pods run elsewhere (${elsewhere.join(', ')})` : 'no pod uses the claim any more',
  };
}
