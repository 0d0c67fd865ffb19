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
 * (stuck-evidence.ts, nominatedSince): kube-scheduler is binding the pod there or preempting for
 * it. A binding whose PreBind waits on a failing provisioner ends within seconds, clearing the
 * nomination; one that succeeds binds the pod, and the claim is kept. A nomination that outlasts
 * this keeps the claim (the rollback stops): deleting it under a pod being bound leaves the pod on
 * a claim being deleted, which its kubelet will not start it with.
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
 * volume provably unused; and the pod not nominated to a node (waited for, up to NOMINATED_WAIT_MS).
 */
export function decideClaimDelete(r: ProvisioningRollback, c: RollbackClaim, f: DeleteFacts): DeletePlan {
  if (!f.claim || f.claim.metadata?.uid !== c.uid || f.claim.metadata?.deletionTimestamp) return { kind: 'alreadyDeleted' };
  const changed = claimChange(f.claim, c);
  if (changed) return { kind: 'keep', why: `claim ${c.name} changed since the rollback was decided (${changed})` };
  // Finalizers are not in the template (a protection finalizer comes and goes): one added since the decision is read here.
  const held = heldByOthers(f.claim, f.admittedFinalizers);
  if (held) return { kind: 'keep', why: held };
  const podName = r.spec.pod.name;
  if (!f.pod || f.pod.metadata?.uid !== r.spec.pod.uid) return { kind: 'keep', why: `pod ${podName} is gone` };
  if (f.pod.spec?.nodeName) return { kind: 'keep', why: `pod ${podName} was scheduled to node ${f.pod.spec.nodeName}` };
  const other = f.claimUsers.find((p) => p.metadata?.uid !== r.spec.pod.uid);
  if (other) return { kind: 'keep', why: `claim ${c.name} is also used by pod ${other.metadata?.name}` };
  if (f.volumeUse) return { kind: 'keep', why: `volume ${c.volume} may hold data: ${f.volumeUse}` };
  const nominated = f.pod.status?.nominatedNodeName;
  if (nominated) {
    const left = createdMs(r) + NOMINATED_WAIT_MS - f.now;
    const why = `the scheduler has nominated node ${nominated} for pod ${podName} (it is binding the pod there, or preempting for it)`;
    if (left <= 0) return { kind: 'keep', why: `${why} for longer than ${NOMINATED_WAIT_MS / 1000} s since the rollback began` };
    return { kind: 'wait', ms: Math.min(left, NOMINATED_RECHECK_MS), why };
  }
  return { kind: 'delete', uid: c.uid, resourceVersion: f.claim.metadata?.resourceVersion };
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
