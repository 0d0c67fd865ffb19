import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { isDeepStrictEqual } from 'node:util';
import { claimTemplate, heldByOthers } from '../claim-template.js';
import { deletedClaimStep, TERMINATING_RECHECK_MS } from './decide-intent.js';
import { createdMs } from './provisioning-rollback.js';
import type { ClaimTemplate, ProvisioningRollback, RollbackClaim } from './provisioning-rollback.js';

/** What the server says, read right before a rollback's claim delete (the cache may lag by a write or two). */
export interface DeleteFacts {
  claim: PersistentVolumeClaim | undefined;
  pod: Pod | undefined;
  /** Why the claim's volume may hold data now (its live mark, the cached evidence), or undefined while provably unused. */
  volumeUse: string | undefined;
  /**
   * Every pod the server has that references the claim. Another pod may have been scheduled since
   * the decision, which read the cache: a pod whose kubelet mounts the volume before the delete
   * starts with the claim Terminating and writes to a volume the reclaim policy then deletes.
   */
  claimUsers: Pod[];
  /**
   * The finalizers admission gives a copy of the claim (recreate-check.ts): a re-created claim gets
   * them back. Read only when the claim carries a finalizer besides kubernetes.io/pvc-protection.
   */
  admittedFinalizers: readonly string[];
  /** This process's clock (ms), for how long a nominated pod is waited for (NOMINATED_WAIT_MS). */
  now: number;
}

/**
 * How long after a rollback is recorded its claim's delete waits while the pod has a nominated node
 * (stuck-evidence.ts, nominatedSince): kube-scheduler is binding the pod there, or preempting for
 * it. A binding whose PreBind waits on a provisioner that gave the claim back (removed its selected
 * node) fails within a second or so, clearing the nomination; one that succeeds binds the pod, and
 * the claim is kept. Past this, the delete goes on as without a nomination: a provisioner that keeps
 * failing without giving the claim back holds the binding cycle for kube-scheduler's bind timeout
 * (600 s), and a preemption's nomination may outlive a node that went away; keeping the claim then
 * would spend one of the workload's attempts for nothing.
 */
export const NOMINATED_WAIT_MS = 60_000;

/** How soon a claim whose delete waits on a nominated pod is looked at again (the pod's events also bring it back). */
export const NOMINATED_RECHECK_MS = 2_000;

export type DeletePlan =
  /** Gone or going: deleted by us before a crash, or by someone else meanwhile; either way re-created from our template. */
  | { kind: 'alreadyDeleted' }
  /** The rollback stops before this claim: it stays as it is. */
  | { kind: 'keep'; why: string }
  /** Not yet: look again after `ms` (the pod has a nominated node). */
  | { kind: 'wait'; ms: number; why: string }
  /** Delete with these preconditions: the claim decided on, at the version just checked. */
  | { kind: 'delete'; uid: string; resourceVersion: string | undefined };

/**
 * Whether a rollback in progress may delete claim `c` now, from the server's answers. A claim with
 * a newer resourceVersion than the decision's is still the one decided on if it is bound to the
 * same volume and would be re-created the same (a binder's annotation, a protection finalizer);
 * otherwise it is kept. The pod must still be the one, unscheduled, and the claim's only user; the
 * volume provably unused; and the pod not nominated to a node (waited for, up to NOMINATED_WAIT_MS: podPlan).
 */
export function decideClaimDelete(r: ProvisioningRollback, c: RollbackClaim, f: DeleteFacts): DeletePlan {
  if (!f.claim || f.claim.metadata?.uid !== c.uid || f.claim.metadata?.deletionTimestamp) return { kind: 'alreadyDeleted' };
  const changed = claimChange(f.claim, c);
  if (changed) return { kind: 'keep', why: `claim ${c.name} changed since the rollback was decided (${changed})` };
  // Finalizers are not in the template (a protection finalizer comes and goes): one added since the decision is read here.
  const held = heldByOthers(f.claim, f.admittedFinalizers);
  if (held) return { kind: 'keep', why: held };
  const pod = podPlan(r, f.pod, f.now);
  if (pod?.kind === 'keep') return pod;
  const other = f.claimUsers.find((p) => p.metadata?.uid !== r.spec.pod.uid);
  if (other) return { kind: 'keep', why: `claim ${c.name} is also used by pod ${other.metadata?.name}` };
  if (f.volumeUse) return { kind: 'keep', why: `volume ${c.volume} may hold data: ${f.volumeUse}` };
  return pod ?? { kind: 'delete', uid: c.uid, resourceVersion: f.claim.metadata?.resourceVersion };
}

/**
 * What the recorded pod, as the server has it, says of the claim's delete: kept if it is gone or
 * was scheduled; wait while it is nominated to a node (NOMINATED_WAIT_MS from the record's
 * creation); undefined when nothing. Asked with the checks above, and again right before the delete
 * is sent: the checks between take seconds (the replay of pod events), in which a binding cycle can
 * begin.
 */
export function podPlan(r: ProvisioningRollback, pod: Pod | undefined, now: number): Extract<DeletePlan, { kind: 'keep' | 'wait' }> | undefined {
  const podName = r.spec.pod.name;
  if (!pod || pod.metadata?.uid !== r.spec.pod.uid) return { kind: 'keep', why: `pod ${podName} is gone` };
  if (pod.spec?.nodeName) return { kind: 'keep', why: `pod ${podName} was scheduled to node ${pod.spec.nodeName}` };
  const nominated = pod.status?.nominatedNodeName;
  const left = createdMs(r) + NOMINATED_WAIT_MS - now;
  if (!nominated || left <= 0) return undefined;
  return { kind: 'wait', ms: Math.min(left, NOMINATED_RECHECK_MS), why: `the scheduler has nominated node ${nominated} for pod ${podName} (it is binding the pod there, or preempting for it): the delete waits up to ${NOMINATED_WAIT_MS / 1000} s from the rollback's start for the nomination to clear` };
}

/** What differs, for the rollback, between the claim decided on and the claim now; undefined when nothing does. */
function claimChange(live: PersistentVolumeClaim, c: RollbackClaim): string | undefined {
  if (live.metadata?.resourceVersion === c.resourceVersion) return undefined;
  if (live.spec?.volumeName !== c.volume) return `now bound to ${live.spec?.volumeName ?? 'no volume'}`;
  const canonical = (t: ClaimTemplate): unknown => JSON.parse(JSON.stringify(t));
  if (!isDeepStrictEqual(canonical(claimTemplate(live)), canonical(c.template))) return 'its labels, annotations, owners or spec';
  return undefined;
}

/**
 * After the create of a deleted claim was refused (a claim of that name exists), from that claim as
 * the server has it: ours, created before a crash, or the old one still going (look again later).
 */
export function afterCreateRefused(c: RollbackClaim, live: PersistentVolumeClaim | undefined, now: number): { kind: 'noteRecreated'; uid: string } | { kind: 'waitTerminating'; ms: number } {
  const step = deletedClaimStep(c, live, now);
  if (step.kind === 'noteRecreated') return { kind: 'noteRecreated', uid: step.uid };
  return { kind: 'waitTerminating', ms: step.kind === 'waitTerminating' ? step.ms : TERMINATING_RECHECK_MS };
}
