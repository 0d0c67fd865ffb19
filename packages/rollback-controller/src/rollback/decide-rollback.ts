import { ANN_SELECTED_NODE, claimNamesOfPod, doublingBackoffMs, podNodeSelectionMismatch, volumeNodeAffinityMatches } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, ANN_PROVISIONED_FOR_WORKLOAD, ANN_USED_BECAUSE, usageOf } from './marks.js';
import { cannotRunOn, EVIDENCE_CLOCK_SKEW_MS, evidenceAhead } from './stuck-evidence.js';
import { nodeRejectsPod } from './node-rejects-pod.js';
import type { RollbackWorld } from './rollback-world.js';
import { newestFirst } from './intent/provisioning-rollback.js';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';
import { podMayHaveRun, unusedMarkDoubt } from './usage-evidence.js';
import { historyKeyOfPod, workloadOf } from './workload.js';

/**
 * How long, by default (--rollback-node-state-wait), a pod must be seen with every claim decided before the state of its volumes' node alone
 * (gone, cordoned, tainted: read as now) rolls it back. kube-scheduler's VolumeBinding PreBind
 * waits for the claims to be bound, then binds the pod to the node it chose whether or not that node
 * was cordoned or tainted since its Filter ran: for that second or so the pod looks stuck on a node
 * it cannot use. The scheduler's own report and a provisioner's failure need no wait: each says
 * that an attempt failed.
 */
export const NODE_STATE_DWELL_MS = 15_000;

export interface PinnedClaim {
  claim: PersistentVolumeClaim;
  volume: PersistentVolume;
  node: string;
}

export type RollbackDecision =
  | { kind: 'none' }
  /**
   * Stuck, but not yet decided (or backing off): look again later. `firstSeen`: the caller's to
   * remember, and pass back as `stuckSince`. `dwelling`: every claim decided and only the node's
   * state against it (NODE_STATE_DWELL_MS); `readyFirstSeen` the caller's to remember while it
   * dwells, and pass back as `readySince`.
   */
  | { kind: 'wait'; ms: number; why: string; firstSeen?: number; dwelling?: true; readyFirstSeen?: number }
  /** Stuck, but a rollback cannot be justified: say why, touch nothing. */
  | { kind: 'refuse'; why: string }
  /** Stuck, and this workload has had its share of rollbacks. */
  | { kind: 'limit'; why: string }
  | { kind: 'rollback'; why: string; pinned: PinnedClaim[]; attempt: number; evidenceTime: number };

/** The claims of the pod bound to volumes we marked, with the node each was provisioned for. */
function pinnedClaims(pod: Pod, world: RollbackWorld): PinnedClaim[] {
  const ns = pod.metadata?.namespace ?? '';
  return claimNamesOfPod(pod).flatMap((name) => {
    const claim = world.claim(ns, name);
    const volume = claim?.spec?.volumeName ? world.volume(claim.spec.volumeName) : undefined;
    const node = volume?.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE];
    // Our provisioned-for annotation means we saw it provisioned; used ones are kept so that a refusal can say why.
    if (!claim || !volume || !node || usageOf(volume) === undefined) return [];
    if (volume.spec?.claimRef?.uid !== claim.metadata?.uid) return [];
    return [{ claim, volume, node }];
  });
}

/**
 * Whether the volume was provisioned for this pod: its uid, or (a pod re-created by its
 * controller) the same workload once the pod it was provisioned for is gone.
 */
function provisionedFor(v: PersistentVolume, pod: Pod, world: RollbackWorld): boolean {
  const forPod = v.metadata?.annotations?.[ANN_PROVISIONED_FOR_POD];
  if (forPod === pod.metadata?.uid) return true;
  const workload = workloadOf(pod);
  return workload.kind !== 'Pod' && v.metadata?.annotations?.[ANN_PROVISIONED_FOR_WORKLOAD] === workload.uid && !!forPod && !world.podExists(forPod);
}

/** Why this rollback cannot be justified, or undefined: every pinned volume must be provably unused and this pod's. */
function refusal(pod: Pod, pinned: PinnedClaim[], world: RollbackWorld): string | undefined {
  if (podMayHaveRun(pod)) return `pod ${pod.metadata?.name} has run (phase ${pod.status?.phase ?? 'unknown'}), so its volumes may hold data`;
  for (const p of pinned) {
    const name = p.volume.metadata?.name;
    if (usageOf(p.volume) === 'used') return `volume ${name} is marked used (${p.volume.metadata?.annotations?.[ANN_USED_BECAUSE] ?? 'evidence of use seen earlier'})`;
    if (!provisionedFor(p.volume, pod, world)) return `volume ${name} was provisioned for another pod (uid ${p.volume.metadata?.annotations?.[ANN_PROVISIONED_FOR_POD] ?? 'unknown'})`;
    const others = world.podsUsingClaim(pod.metadata?.namespace ?? '', p.claim.metadata?.name ?? '').filter((x) => x.metadata?.uid !== pod.metadata?.uid);
    if (others.length > 0) return `claim ${p.claim.metadata?.name} is also used by pod ${others[0]!.metadata?.name}`;
    const evidence = unusedMarkDoubt(p.volume, world);
    if (evidence) return `volume ${name} may hold data: ${evidence}`;
  }
  return undefined;
}

/**
 * Is the pod stuck on volumes provisioned for a node it can no longer run on, and can undoing them
 * be justified (kubernetes #94217)? Evidence of the node's refusal counts only if newer than the
 * workload's last rollback. No rollback while another claim of the pod is undecided (it may still
 * be provisioning) unless the grace period ran out; none beyond the workload's cap; none sooner
 * than its backoff. Justified only when every pinning volume is provably unused and this pod's.
 * `stuckSince`: when the caller first saw this pod stuck with a claim undecided (a `wait` decision's
 * `firstSeen`), if it has; the grace period counts from then. `readySince`: when it first saw the
 * pod ready to roll back on the node's state alone (`readyFirstSeen`); NODE_STATE_DWELL_MS counts
 * from then.
 */
export function decideRollback(pod: Pod, world: RollbackWorld, stuckSince: number | undefined, readySince?: number): RollbackDecision {
  if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp) return { kind: 'none' };
  const pinned = pinnedClaims(pod, world);
  if (pinned.length === 0) return { kind: 'none' };
  const workload = workloadOf(pod);
  const history = historyOf(pod, pinned, world);
  const last = history[0];
  const notBefore = last ? Date.parse(last.spec.evidenceTime ?? last.metadata?.creationTimestamp ?? '') || 0 : 0;
  const nodes = [...new Set(pinned.map((p) => p.node))];
  const verdicts = nodes.flatMap((n) => cannotRunOn(n, pod, world, notBefore) ?? []);
  if (verdicts.length === 0) return aheadOfClock(nodes, pod, world, notBefore);
  const why = verdicts.map((v) => v.why).join('; ');
  if (history.length >= world.maxRollbacks) {
    return { kind: 'limit', why: `${why}; but workload ${workload.kind}/${workload.name} has had ${history.length} rollbacks (the limit is ${world.maxRollbacks}): not rolling back again` };
  }
  const now = world.now();
  if (last) {
    const next = Date.parse(last.metadata?.creationTimestamp ?? '') + doublingBackoffMs(world.backoffBaseMs, history.length);
    if (next > now) return { kind: 'wait', ms: next - now, why: `${why}; backing off after rollback ${history.length}` };
  }
  const held = heldElsewhere(pod, pinned, nodes, world);
  if (held) return { kind: 'refuse', why: `${why}; but ${held}` };
  const undecided = undecidedClaims(pod, pinned, world);
  if (undecided.length > 0) {
    const left = (stuckSince ?? now) + world.graceMs - now;
    if (left > 0) return { kind: 'wait', ms: left, why: `${why}; claim(s) ${undecided.join(', ')} still undecided`, firstSeen: stuckSince === undefined ? now : undefined };
  }
  const refused = refusal(pod, pinned, world);
  if (refused) return { kind: 'refuse', why: refused };
  if (verdicts.every((v) => v.nodeState)) {
    const left = (readySince ?? now) + world.nodeStateDwellMs - now;
    if (left > 0) {
      const why2 = `${why}; waiting ${Math.ceil(left / 1000)} s for the scheduler to bind the pod there (it may be doing so now) or to find it unschedulable`;
      return { kind: 'wait', ms: left, why: why2, dwelling: true, readyFirstSeen: readySince === undefined ? now : undefined };
    }
  }
  // After the newest recorded attempt, not the count: once the oldest record has expired, the count
  // would name a record that still exists (its create refused, the rollback silently not made).
  const attempt = Math.max(0, ...history.map((r) => r.spec.attempt ?? 0)) + 1;
  return { kind: 'rollback', why, pinned, attempt, evidenceTime: Math.max(...verdicts.map((v) => v.at)) };
}

/**
 * The rollbacks that count for this pod's cap, backoff and evidence time, newest first: its
 * workload's, and those that re-created any claim it is pinned by. The workload is read from the
 * pod's owner references, which whoever may update the pod can rewrite (or a bare pod be made
 * again under a new uid): each new owner would start an empty history, with no cap and no backoff.
 * A claim keeps its name through a rollback, so its series carries the history across such a
 * change. (A claim of a generic ephemeral volume is named after its pod: a pod made again under
 * another name has a series of its own, as it has a workload of its own.)
 */
function historyOf(pod: Pod, pinned: readonly PinnedClaim[], world: RollbackWorld): ProvisioningRollback[] {
  const ns = pod.metadata?.namespace ?? '';
  const byName = new Map<string, ProvisioningRollback>();
  for (const r of world.rollbacksOf(historyKeyOfPod(pod))) byName.set(r.metadata?.name ?? '', r);
  for (const p of pinned) for (const r of world.rollbacksOfClaim(ns, p.claim.metadata?.name ?? '')) byName.set(r.metadata?.name ?? '', r);
  return newestFirst(byName.values());
}

/**
 * Evidence dated further ahead of this clock than EVIDENCE_CLOCK_SKEW_MS (a writer's clock far
 * ahead, or a forged time) is looked at again once the clock is within the skew of the earliest
 * such record: until then the pod waits, saying why.
 */
function aheadOfClock(nodes: string[], pod: Pod, world: RollbackWorld, notBefore: number): RollbackDecision {
  const ahead = nodes.flatMap((n) => evidenceAhead(n, pod, world, notBefore) ?? []);
  if (ahead.length === 0) return { kind: 'none' };
  const at = Math.min(...ahead.map((v) => v.at));
  const why = ahead.filter((v) => v.at === at).map((v) => v.why).join('; ');
  const ms = at - EVIDENCE_CLOCK_SKEW_MS - world.now();
  return { kind: 'wait', ms: Math.max(ms, 1), why: `${why}; but that evidence is dated ${new Date(at).toISOString()}, ahead of this clock by more than ${EVIDENCE_CLOCK_SKEW_MS / 60_000} minutes: it counts from ${new Date(at - EVIDENCE_CLOCK_SKEW_MS).toISOString()}` };
}

/**
 * A claim of the pod bound to a volume this loop does not roll back (static, provisioned before it
 * watched, unmarked) whose node affinity allows no node the pod can be placed on now but those its
 * volumes pin it to: undoing the pinned claims would not move the pod, whose new volumes
 * kube-scheduler would provision on that node again (or which would wait, unplaceable, while the
 * pinned node may come back), rollback after rollback up to the cap. A node cordoned, tainted
 * against the pod, or outside its nodeSelector or required node affinity is no place to go until
 * it changes, which queues the pods of the volumes this loop marked unused again
 * (rollback-controller.ts, onNodeSchedulingChanged). Why, or undefined.
 */
function heldElsewhere(pod: Pod, pinned: readonly PinnedClaim[], failed: readonly string[], world: RollbackWorld): string | undefined {
  const ns = pod.metadata?.namespace ?? '';
  const pinnedNames = new Set(pinned.map((p) => p.claim.metadata?.name));
  for (const name of claimNamesOfPod(pod)) {
    if (pinnedNames.has(name)) continue;
    const c = world.claim(ns, name);
    const v = c?.spec?.volumeName ? world.volume(c.spec.volumeName) : undefined;
    const affinity = v?.spec?.nodeAffinity;
    if (!v || !affinity?.required || v.spec?.claimRef?.uid !== c?.metadata?.uid) continue;
    const elsewhere = world.nodes().some((n) => {
      const nodeName = n.metadata?.name ?? '';
      return !failed.includes(nodeName) && volumeNodeAffinityMatches(affinity, n) && nodeRejectsPod(nodeName, n, pod) === undefined && podNodeSelectionMismatch(pod, n) === undefined;
    });
    if (!elsewhere) return `claim ${name} is bound to volume ${v.metadata?.name}, which is not rolled back and whose node affinity allows no other node the pod can be placed on now (none, or cordoned, tainted against it, or outside the pod's node selector or affinity): rolling back the others would not move the pod`;
  }
  return undefined;
}

/**
 * Claims of the pod whose fate is not known yet: not pinned to the failed node by an unused
 * volume, not failed to provision (since their current selected node), and not bound. While one
 * may still be provisioning, a rollback could undo work in progress; once none is, nothing is
 * gained by waiting. A bound claim
 * (its volume names it back) provisions nothing any longer, and where its volume lets the pod run
 * was weighed already (heldElsewhere); one whose volume does not name it back yet is still being
 * bound.
 */
function undecidedClaims(pod: Pod, pinned: PinnedClaim[], world: RollbackWorld): string[] {
  const ns = pod.metadata?.namespace ?? '';
  const pinnedNames = new Set(pinned.map((p) => p.claim.metadata?.name));
  return claimNamesOfPod(pod).filter((name) => {
    if (pinnedNames.has(name)) return false;
    const c = world.claim(ns, name);
    if (!c) return true;
    if (c.spec?.volumeName) return world.volume(c.spec.volumeName)?.spec?.claimRef?.uid !== c.metadata?.uid;
    // Failed (and not bound since): decided, if given back (no selected node) or failed since its
    // current selection; an earlier attempt's failure says nothing of the one under way.
    const selected = c.metadata?.annotations?.[ANN_SELECTED_NODE];
    return !world.provisioningFailures(c).some((e) => !selected || world.failedSinceSelected(c, e));
  });
}
