import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, ANN_SELECTED_NODE, ANN_USED_BECAUSE, usageOf } from './marks.js';
import { nodeRejectsPod } from './node-rejects-pod.js';
import type { RollbackWorld } from './rollback-world.js';
import { podMayHaveRun, usedEvidence } from './usage-evidence.js';

export interface PinnedClaim {
  claim: PersistentVolumeClaim;
  volume: PersistentVolume;
  node: string;
}

export type RollbackDecision =
  | { kind: 'none' }
  /** Stuck, but within the grace period: look again later. */
  | { kind: 'wait'; ms: number; why: string }
  /** Stuck, but a rollback cannot be justified: say why, touch nothing. */
  | { kind: 'refuse'; why: string; pinned: PinnedClaim[] }
  | { kind: 'rollback'; why: string; pinned: PinnedClaim[] };

const claimsOf = (p: Pod): string[] => (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));

/** The claims of the pod bound to volumes we marked unused, with the node each was provisioned for. */
function pinnedClaims(pod: Pod, world: RollbackWorld): PinnedClaim[] {
  const ns = pod.metadata?.namespace ?? '';
  return claimsOf(pod).flatMap((name) => {
    const claim = world.claim(ns, name);
    const volume = claim?.spec?.volumeName ? world.volume(claim.spec.volumeName) : undefined;
    const node = volume?.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE];
    // Our provisioned-for annotation means we saw it provisioned; used ones are kept so that a refusal can say why.
    if (!claim || !volume || !node || usageOf(volume) === undefined) return [];
    if (volume.spec?.claimRef?.uid && volume.spec.claimRef.uid !== claim.metadata?.uid) return [];
    return [{ claim, volume, node }];
  });
}

/** Evidence that the pod cannot run on the node its pinned volumes were provisioned for. */
function cannotRunOn(node: string, pod: Pod, world: RollbackWorld): string | undefined {
  const rejected = nodeRejectsPod(node, world.node(node), pod);
  if (rejected) return rejected;
  const ns = pod.metadata?.namespace ?? '';
  for (const name of claimsOf(pod)) {
    const sibling = world.claim(ns, name);
    if (!sibling || sibling.spec?.volumeName) continue;
    const failures = world.provisioningFailures(sibling);
    if (failures.length === 0) continue;
    const selected = sibling.metadata?.annotations?.[ANN_SELECTED_NODE];
    // The external-provisioner's reschedule signal: selected-node removed after a failed attempt.
    if (!selected) return `claim ${name} failed to provision and its selected node was removed (${failures[0]!.message ?? 'ProvisioningFailed'})`;
    if (selected === node && failures.some((e) => /ResourceExhausted/i.test(e.message ?? ''))) return `claim ${name} cannot be provisioned on node ${node}: ${failures[0]!.message}`;
  }
  const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (cond?.status === 'False' && cond.reason === 'Unschedulable' && /volume node affinity conflict/i.test(cond.message ?? '')) {
    return `the scheduler reports: ${cond.message}`;
  }
  return undefined;
}

/** Another claim of the pod is still being provisioned (selected node set, no volume, no failure yet). */
function siblingStillProvisioning(pod: Pod, world: RollbackWorld): string | undefined {
  const ns = pod.metadata?.namespace ?? '';
  for (const name of claimsOf(pod)) {
    const c = world.claim(ns, name);
    if (c && !c.spec?.volumeName && c.metadata?.annotations?.[ANN_SELECTED_NODE] && world.provisioningFailures(c).length === 0) return name;
  }
  return undefined;
}

/**
 * Seed 004 for one pod: is it stuck on volumes provisioned for a node it can no longer run on, and
 * can undoing them be justified? Justified only when every pinning volume still carries our unused
 * mark with no evidence of use, was provisioned for this very pod (uid), the pod was never bound to
 * a node, and no other pod references the claim.
 */
export function decideRollback(pod: Pod, world: RollbackWorld): RollbackDecision {
  if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp) return { kind: 'none' };
  const pinned = pinnedClaims(pod, world);
  if (pinned.length === 0) return { kind: 'none' };
  const reasons = [...new Set(pinned.map((p) => p.node))].flatMap((n) => cannotRunOn(n, pod, world) ?? []);
  if (reasons.length === 0) return { kind: 'none' };
  const why = reasons.join('; ');
  const busy = siblingStillProvisioning(pod, world);
  const since = world.stuckSince(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
  const left = since + world.graceMs - world.now();
  if (left > 0) return { kind: 'wait', ms: left, why: busy ? `${why}; claim ${busy} is still being provisioned` : why };
  if (busy && !reasons.some((r) => r.startsWith('node '))) return { kind: 'wait', ms: world.graceMs, why: `claim ${busy} is still being provisioned` };
  if (podMayHaveRun(pod)) return { kind: 'refuse', why: `pod ${pod.metadata?.name} has run (phase ${pod.status?.phase ?? 'unknown'}), so its volumes may hold data`, pinned };
  for (const p of pinned) {
    if (usageOf(p.volume) === 'used') {
      return { kind: 'refuse', why: `volume ${p.volume.metadata?.name} is marked used (${p.volume.metadata?.annotations?.[ANN_USED_BECAUSE] ?? 'evidence of use seen earlier'})`, pinned };
    }
    const podUid = p.volume.metadata?.annotations?.[ANN_PROVISIONED_FOR_POD];
    if (podUid !== pod.metadata?.uid) return { kind: 'refuse', why: `volume ${p.volume.metadata?.name} was provisioned for another pod (uid ${podUid ?? 'unknown'})`, pinned };
    const others = world.podsUsingClaim(pod.metadata?.namespace ?? '', p.claim.metadata?.name ?? '').filter((x) => x.metadata?.uid !== pod.metadata?.uid);
    if (others.length > 0) return { kind: 'refuse', why: `claim ${p.claim.metadata?.name} is also used by pod ${others[0]!.metadata?.name}`, pinned };
    const evidence = usedEvidence(p.volume, world);
    if (evidence) return { kind: 'refuse', why: `volume ${p.volume.metadata?.name} may hold data: ${evidence}`, pinned };
  }
  return { kind: 'rollback', why, pinned };
}
