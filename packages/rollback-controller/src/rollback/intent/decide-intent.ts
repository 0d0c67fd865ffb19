import type { PersistentVolumeClaim } from '@topovol/shared';
import { claimState } from './provisioning-rollback.js';
import type { ClaimState, ProvisioningRollback, RollbackClaim } from './provisioning-rollback.js';

/** The next writes of a rollback in progress; the actuator stops at the first that does not succeed. */
export type IntentStep =
  /** Written before the delete is sent: after a crash, a missing claim in this state was ours to re-create. */
  | { kind: 'markDeleting'; claim: RollbackClaim }
  /** Re-check the pod and the volume on the server, then delete with uid + resourceVersion preconditions. */
  | { kind: 'deleteClaim'; claim: RollbackClaim }
  /** The rollback stopped before this claim was deleted: it stays as it is. */
  | { kind: 'keep'; claim: RollbackClaim; why: string }
  | { kind: 'createClaim'; claim: RollbackClaim }
  /** A claim of that name exists again (ours, created before a crash): record it. */
  | { kind: 'noteRecreated'; claim: RollbackClaim; uid: string }
  /** The old claim is still terminating (a protection finalizer): look again after `ms`. */
  | { kind: 'waitTerminating'; claim: RollbackClaim; ms: number }
  /**
   * `message`: what the record says, when more than the phase (claims abandoned with their
   * namespace, claims kept). `partial`: some claims re-created, others kept: the kept ones' volumes
   * may still hold the pod where it was, so the rollback may not have freed it.
   */
  | { kind: 'finish'; phase: 'Completed' | 'Aborted'; message?: string; partial?: true };

/** How soon a claim that has just started terminating is looked at again. */
export const TERMINATING_RECHECK_MS = 1_000;
/** The longest wait between two looks at a claim still terminating. */
export const TERMINATING_RECHECK_MAX_MS = 30_000;

/**
 * How soon a claim still terminating is looked at again: after as long as it has been terminating,
 * from TERMINATING_RECHECK_MS to TERMINATING_RECHECK_MAX_MS. Its protection finalizer usually goes
 * within seconds (with its last pod); a finalizer someone else holds (a claim deleted by its owner
 * while a rollback runs) may stay for days, and each look reads the claim from the server. Its
 * delete is seen sooner anyway: the claim watch queues the record (rollback-controller.ts).
 */
export function terminatingRecheckMs(live: PersistentVolumeClaim, now: number): number {
  const since = Date.parse(live.metadata?.deletionTimestamp ?? '');
  const age = Number.isFinite(since) ? now - since : 0;
  return Math.min(TERMINATING_RECHECK_MAX_MS, Math.max(TERMINATING_RECHECK_MS, age));
}

/** The step for a claim the record says Deleted, from the claim of that name as last seen. */
export function deletedClaimStep(c: RollbackClaim, live: PersistentVolumeClaim | undefined, now: number): Extract<IntentStep, { kind: 'createClaim' | 'waitTerminating' | 'noteRecreated' }> {
  if (!live) return { kind: 'createClaim', claim: c };
  if (live.metadata?.uid === c.uid) return { kind: 'waitTerminating', claim: c, ms: terminatingRecheckMs(live, now) };
  return { kind: 'noteRecreated', claim: c, uid: live.metadata?.uid ?? '' };
}

/**
 * What to do next for a rollback in progress, from its record and the claims as cached. Claims are
 * handled in order; once one was kept (the pod got scheduled, the volume was used, the claim
 * changed), the ones not yet deleted are kept too. Deleted ones are always re-created, exactly once:
 * a claim of that name with another uid is taken as the re-created one.
 */
export function decideIntent(r: ProvisioningRollback, claim: (namespace: string, name: string) => PersistentVolumeClaim | undefined, now = Date.now()): IntentStep[] {
  const ns = r.spec.pod.namespace;
  const stopped = r.spec.claims.some((c) => claimState(r, c.name) === 'Kept');
  const steps: IntentStep[] = [];
  let open = false;
  for (const c of r.spec.claims) {
    switch (claimState(r, c.name)) {
      case undefined:
        if (stopped) steps.push({ kind: 'keep', claim: c, why: 'the rollback stopped before this claim was deleted' });
        else steps.push({ kind: 'markDeleting', claim: c }, { kind: 'deleteClaim', claim: c });
        open = true;
        break;
      case 'Deleting':
        steps.push({ kind: 'deleteClaim', claim: c });
        open = true;
        break;
      case 'Deleted':
        steps.push(deletedClaimStep(c, claim(ns, c.name), now));
        open = true;
        break;
      case 'Kept':
      case 'Recreated':
      case 'Abandoned':
        break;
    }
  }
  if (open) return steps;
  const named = (state: ClaimState): string[] => r.spec.claims.filter((c) => claimState(r, c.name) === state).map((c) => c.name);
  const recreated = named('Recreated');
  const abandoned = named('Abandoned');
  // Kept after others were re-created (a restart that could not vouch for a later claim's volume,
  // the pod bound meanwhile): the kept volumes were provisioned for the node the rollback moves the
  // pod from, and their node affinity may keep it there.
  // Not when the namespace went (claims Abandoned): there is no pod left to hold.
  const partial = recreated.length > 0 && stopped && abandoned.length === 0;
  const said = [
    ...(partial ? [`claim(s) ${recreated.join(', ')} re-created; claim(s) ${named('Kept').join(', ')} kept (their states say why): their volumes may still hold the pod to node ${r.spec.node}'s topology`] : []),
    ...(abandoned.length > 0 ? [`claim(s) ${abandoned.join(', ')} not re-created: namespace ${ns} was deleted`] : []),
  ];
  return [{ kind: 'finish', phase: recreated.length > 0 ? 'Completed' : 'Aborted', ...(said.length > 0 ? { message: said.join('; ') } : {}), ...(partial ? { partial: true as const } : {}) }];
}
