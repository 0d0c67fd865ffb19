import { claimNamesOfPod, errorMessage, isRefusal } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
import type { ClaimState, ProvisioningRollback, RollbackClaim } from './intent/provisioning-rollback.js';
import { isAnnounced, isFinished } from './intent/provisioning-rollback.js';
import { afterCreateRefused, decideClaimDelete, podPlan } from './intent/decide-claim-delete.js';
import { deletedClaimStep } from './intent/decide-intent.js';
import { heldByOthers } from './claim-template.js';
import type { IntentStep } from './intent/decide-intent.js';
import type { SettlePlan } from './intent/held-volume.js';
import { decideHold, decideSettle } from './intent/held-volume.js';
import type { DeletedClaimWatch } from './deleted-claim-watch.js';
import type { RollbackActuator } from './rollback-actuator.js';
import type { RollbackServerReads } from './rollback-server-reads.js';

/** How soon a re-create the API server refused is tried again. */
export const RECREATE_RETRY_MS = 60_000;

export interface AdvanceDeps {
  actuator: RollbackActuator;
  reads: RollbackServerReads;
  /** The pods of the claims being deleted, as the pod watch delivers them (held volumes are settled on it). */
  claimWatch: DeletedClaimWatch;
  /** Tests only: runs between the last re-check and the claim's delete, to widen the race window at will. */
  beforeClaimDelete?: (claim: RollbackClaim) => Promise<void>;
}

/**
 * Advances a rollback in progress: the glue between its steps (decideIntent: record in, steps out),
 * the server reads a claim's delete is decided on (decideClaimDelete), and the actuator's writes,
 * one at a time, each recorded in the record's status, so that a crash or a new leader finishes it
 * exactly once. Returns when to look again, if a step said so; stops at the first step that changes the plan.
 */
export async function advanceRollback(d: AdvanceDeps, r: ProvisioningRollback, steps: IntentStep[]): Promise<number | undefined> {
  let current = r;
  // Events first, then the Started condition that says they were sent: a process that dies in
  // between (or right after creating the record) leaves it to its successor to send them again
  // (the same Event, counted twice) rather than never.
  if (!isFinished(current) && !isAnnounced(current)) current = await d.actuator.announce(current);
  for (const s of steps) {
    switch (s.kind) {
      case 'markDeleting':
        current = await d.actuator.setClaim(current, s.claim.name, 'Deleting');
        break;
      case 'deleteClaim': {
        const outcome = await deleteClaim(d, current, s.claim);
        if ('wait' in outcome) {
          // Said in the record (once per reason), for `kubectl describe`; the claim stays Deleting.
          const said = current.status?.claims?.find((x) => x.name === s.claim.name)?.message;
          if (said !== outcome.why) await d.actuator.setClaim(current, s.claim.name, 'Deleting', undefined, outcome.why);
          return outcome.wait;
        }
        current = await d.actuator.setClaim(current, s.claim.name, outcome.state, undefined, outcome.why);
        if (outcome.state === 'Kept') {
          d.actuator.reportAborted(current, s.claim, outcome.why ?? '', outcome.refused === true);
          return undefined;
        }
        break;
      }
      case 'keep':
        current = await d.actuator.setClaim(current, s.claim.name, 'Kept', undefined, s.why);
        break;
      case 'createClaim': {
        const done = await recreateClaim(d, current, s.claim);
        if ('wait' in done) return done.wait;
        current = done.record;
        break;
      }
      case 'noteRecreated': {
        // Decided on the cache, which may lag: a claim of the name with another uid there may be
        // one deleted since (an earlier rollback's), with none on the server. Only a claim the
        // server has is taken as the re-created one; with none there, it is created now.
        const next = deletedClaimStep(s.claim, await d.reads.claim(current.spec.pod.namespace, s.claim.name), Date.now());
        if (next.kind === 'waitTerminating') return next.ms;
        // The old claim is gone on the server (read just now): its volume is settled first.
        await settleHeldVolume(d, current, s.claim);
        if (next.kind === 'createClaim') {
          const done = await createFromRecord(d, current, s.claim);
          if ('wait' in done) return done.wait;
          current = done.record;
          break;
        }
        // A claim of the name in a namespace made again since is the new tenant's, not ours to adopt.
        const replaced = await namespaceReplaced(d, current);
        if (replaced) {
          current = await abandonClaim(d, current, s.claim, replaced);
          break;
        }
        current = await d.actuator.setClaim(current, s.claim.name, 'Recreated', next.uid);
        d.actuator.reportAdopted(current, s.claim.name, next.uid);
        break;
      }
      case 'waitTerminating':
        // Its protection finalizer: a pod holds it (see the raced report), or it is going.
        return s.ms;
      case 'finish':
        await d.actuator.finish(current, s.phase, s.message, s.partial === true);
        return undefined;
    }
  }
  return undefined;
}

/**
 * Creates a deleted claim again from the record and records it Recreated (or Abandoned with its
 * namespace). A claim of the name found on the server instead is ours, created before a crash or a
 * lost answer, or its owner's: recorded as the re-created one (ClaimAdopted); the old one still
 * terminating: look again after `wait`.
 */
async function recreateClaim(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim): Promise<{ record: ProvisioningRollback } | { wait: number }> {
  // The old claim must be gone on the server, not only in the cache, before its volume is settled:
  // while it terminates, a pod can still start on it.
  const step = deletedClaimStep(c, await d.reads.claim(r.spec.pod.namespace, c.name), Date.now());
  if (step.kind === 'waitTerminating') return { wait: step.ms };
  await settleHeldVolume(d, r, c);
  return createFromRecord(d, r, c);
}

/** recreateClaim once the old claim is known gone and its volume settled. */
async function createFromRecord(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim): Promise<{ record: ProvisioningRollback } | { wait: number }> {
  const replaced = await namespaceReplaced(d, r);
  if (replaced) return { record: await abandonClaim(d, r, c, replaced) };
  const created = await d.actuator.createClaim(r, c);
  // Refused until a quota or a policy allows it: a minute apart, not after a backoff that doubles
  // to many minutes (the claim must come back soon after it can).
  if (created === 'refused') return { wait: RECREATE_RETRY_MS };
  if (created === 'namespaceGone') return { record: await abandonClaim(d, r, c, `namespace ${r.spec.pod.namespace} is being deleted`) };
  if (created !== 'exists') return { record: await d.actuator.setClaim(r, c.name, 'Recreated', created.uid) };
  const next = afterCreateRefused(c, await d.reads.claim(r.spec.pod.namespace, c.name), Date.now());
  if (next.kind === 'waitTerminating') return { wait: next.ms };
  const record = await d.actuator.setClaim(r, c.name, 'Recreated', next.uid);
  d.actuator.reportAdopted(record, c.name, next.uid);
  return { record };
}

/**
 * Why the claim's namespace is not the one it was deleted from, or undefined: gone, or made again
 * since the rollback began. A re-create refused and retried (a webhook, the manager down) leaves
 * time for it to be deleted and made again; the new one is someone else's, and must not get the old
 * tenant's claim, nor have its own adopted. The record has the namespace's uid; one written before
 * it had none is judged by the creation times (two API-server clocks, to the second).
 */
async function namespaceReplaced(d: AdvanceDeps, r: ProvisioningRollback): Promise<string | undefined> {
  const ns = r.spec.pod.namespace;
  const live = await d.reads.namespace(ns);
  if (!live) return `namespace ${ns} is gone`;
  const made = `namespace ${ns} was deleted and made again since the rollback began: the claim was the deleted namespace's`;
  const recorded = r.spec.pod.namespaceUID;
  if (recorded) return live.uid === recorded ? undefined : `${made} (uid ${recorded} then, ${live.uid} now)`;
  if (live.created > Date.parse(r.metadata?.creationTimestamp ?? '')) return made;
  return undefined;
}

/** The claim is not re-created (its namespace went): recorded Abandoned with why, logged and counted. */
async function abandonClaim(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim, why: string): Promise<ProvisioningRollback> {
  const record = await d.actuator.setClaim(r, c.name, 'Abandoned', undefined, why);
  d.actuator.reportAbandoned(record, c, why);
  return record;
}

/**
 * Reads the claim, the pod and the volume from the server, then deletes if decideClaimDelete says
 * so. A write landing between the read and the delete (kube-controller-manager writes a claim's
 * spec, then its status, right after a bind) fails the delete's precondition with 409 Conflict,
 * which is thrown: the claim stays Deleting in the record, and the queue brings the record back
 * with backoff, to be read and decided afresh as after a crash. A claim changed in what the
 * rollback re-creates is kept then; one that only changed status is deleted.
 */
async function deleteClaim(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim): Promise<{ state: Extract<ClaimState, 'Deleted' | 'Kept'>; why?: string; refused?: true } | { wait: number; why: string }> {
  const ns = r.spec.pod.namespace;
  // From before the last check on, every pod of the claim the watch delivers is noted: one bound
  // between this check and the delete (no precondition closes that window) keeps the volume Retain.
  d.claimWatch.begin(ns, c.name, c.uid);
  const claim = await d.reads.claim(ns, c.name);
  // One list of the namespace's pods gives the recorded pod and every other user of the claim, as
  // kube-controller-manager's pvc-protection asks the API server before it lets a claim go.
  const pods = await d.reads.pods(ns);
  const pod = recordedPod(pods, r);
  const claimUsers = pods.filter((p) => claimNamesOfPod(p).includes(c.name));
  // A finalizer besides the protection one: whether admission gives it to a copy too (one dry run, only then).
  const admittedFinalizers = claim && heldByOthers(claim) ? (await d.reads.recreateCheck(claim)).finalizers : [];
  const plan = decideClaimDelete(r, c, { claim, pod, volumeUse: await d.reads.volumeUse(c.volume), claimUsers, admittedFinalizers, now: Date.now() });
  if (plan.kind === 'alreadyDeleted') {
    // Still there and Terminating: our delete, sent before a crash (or before the pod list below
    // failed), and the pod scheduled meanwhile holds it. Say so now, or nobody ever will.
    if (claim?.metadata?.uid === c.uid && pod?.spec?.nodeName) {
      d.claimWatch.note(pod);
      d.actuator.reportRaced(pod, c);
    }
    return { state: 'Deleted' };
  }
  if (plan.kind === 'keep') return keepClaim(d, r, c, claim?.metadata?.resourceVersion, plan.why);
  if (plan.kind === 'wait') return waitForPod(d, r, c, plan);
  const hold = decideHold(await d.reads.volume(c.volume));
  if (hold.kind === 'used') return keepClaim(d, r, c, plan.resourceVersion, `volume ${c.volume} may hold data: ${hold.why}`);
  if (hold.kind === 'hold') {
    // Refused (a policy guarding volumes): without the hold, a pod the scheduler binds before the
    // delete could write data the claim's delete then takes. Kept, as for a refused delete.
    const held = await d.actuator.holdReclaim(c.volume, hold.resourceVersion);
    if (typeof held === 'object') return { ...(await keepClaim(d, r, c, plan.resourceVersion, `the API server refused holding volume ${c.volume} Retain across the claim's delete: ${held.refused}`)), refused: true };
  }
  // The pod once more, by name: the replay and the hold took seconds, in which kube-scheduler may
  // have begun binding it (its nomination) or bound it.
  const last = podPlan(r, await d.reads.livePod(ns, r.spec.pod.name, r.spec.pod.uid), Date.now());
  if (last?.kind === 'keep') return keepClaim(d, r, c, plan.resourceVersion, last.why);
  if (last?.kind === 'wait') return waitForPod(d, r, c, last);
  await d.beforeClaimDelete?.(c);
  // The loop's own pod watch may have delivered a pod of the claim scheduled or run since the last
  // check (the replay ended, the reads since took round trips): nothing wrote the claim, so its
  // precondition would let the delete through.
  const seen = d.claimWatch.seenUse(ns, c.name, c.uid);
  if (seen) return keepClaim(d, r, c, plan.resourceVersion, seen);
  d.claimWatch.arm(ns, c.name, c.uid);
  // Gone by the time of the delete (an earlier delete of ours landing late, or someone else's):
  // the same as gone at the read above, re-created from the record; recorded Kept, it would be lost.
  let written: 'deleted' | 'gone';
  try {
    written = await d.actuator.deleteClaim(r, c, plan.resourceVersion);
  } catch (err) {
    // Refused (a policy or webhook guarding claims, the role narrowed): nothing was deleted, and
    // the same delete would be refused again, the claim Deleting and its volume held for ever.
    if (!isRefusal(err)) throw err;
    return { ...(await keepClaim(d, r, c, plan.resourceVersion, `the API server refused the claim's delete: ${errorMessage(err)}`)), refused: true };
  }
  if (written === 'gone') return { state: 'Deleted', why: `claim ${c.name} was gone when its delete was sent` };
  // The only window no precondition closes: the scheduler binding the pod between the re-check
  // and the delete. The claim then stays Terminating while the pod exists; say so.
  const after = recordedPod(await d.reads.pods(ns), r);
  if (after?.spec?.nodeName) {
    d.claimWatch.note(after);
    d.actuator.reportRaced(after, c);
  }
  return { state: 'Deleted' };
}

/**
 * The delete waits (the pod is nominated to a node): the claim stays `Deleting`. Its pods are
 * watched again from the next look's checks (a gap in the pod watch meanwhile says nothing of the
 * time after them); a volume held `Retain` by this look stays held until the delete or the keep.
 */
function waitForPod(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim, plan: { ms: number; why: string }): { wait: number; why: string } {
  d.claimWatch.end(r.spec.pod.namespace, c.name, c.uid);
  return { wait: plan.ms, why: plan.why };
}

/** The claim kept, with why: fenced first, then its volume's `Delete` given back. */
async function keepClaim(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim, resourceVersion: string | undefined, why: string): Promise<{ state: Extract<ClaimState, 'Deleted' | 'Kept'>; why?: string; refused?: true }> {
  // A delete of ours may still be on its way (sent before a crash, or timed out here but not at
  // the server): before the claim is recorded Kept, make sure it cannot land any more.
  if ((await d.actuator.fenceClaim(r, c, resourceVersion)) === 'gone') return { state: 'Deleted', why: `claim ${c.name} was gone when it was to be kept` };
  // The claim stays, fenced: its volume's Delete, if held before a crash or a failed delete, is
  // its own again.
  await settleVolume(d, r, c, decideSettle(await d.reads.volume(c.volume), c, undefined));
  d.claimWatch.end(r.spec.pod.namespace, c.name, c.uid);
  return { state: 'Kept', why };
}

/**
 * Once claim `c` is gone from the server: its volume's `Delete` given back if no pod can have used
 * it since the hold (none noted by the pod watch since before the delete, none in the events it has
 * not delivered yet), else left `Retain` with why (held-volume.ts).
 */
async function settleHeldVolume(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim): Promise<void> {
  const ns = r.spec.pod.namespace;
  const v = await d.reads.volume(c.volume);
  let plan = decideSettle(v, c, undefined);
  // Only a `Delete` to give back needs the pods asked about. Not the usage mark: with its claim
  // gone, the mark loop no longer vouches for `unused` and marks it `used`. The delete was decided
  // on a volume provably unused then; since, only a pod of the claim scheduled (a kubelet may mount
  // it; node and attachment evidence follow from that) can have used it. An attachment the server
  // has is asked about too: the loop's watch of them may lag, and one is evidence enough.
  if (plan.kind === 'restore') plan = decideSettle(v, c, d.claimWatch.doubt(ns, c.name, c.uid) ?? (await d.reads.attached(c.volume)) ?? (await d.reads.undeliveredPodUse(ns, c.name)));
  await settleVolume(d, r, c, plan);
  d.claimWatch.end(ns, c.name, c.uid);
}

/**
 * The settle's write; a `Delete` the API server refuses to give back (a policy guarding volumes)
 * leaves the volume `Retain`, said as any volume left so (a Warning, a log line, the metric). Not
 * retried: the claim's re-create waits for the settle, and a tenant's claim missing until a policy
 * changes is worse than a volume kept for an administrator to delete.
 */
async function settleVolume(d: AdvanceDeps, r: ProvisioningRollback, c: RollbackClaim, plan: SettlePlan): Promise<void> {
  const settled = await d.actuator.settleVolume(r, c, plan);
  if (settled === 'settled' || plan.kind !== 'restore') return;
  await d.actuator.settleVolume(r, c, { kind: 'retain', resourceVersion: plan.resourceVersion, why: `the API server refused giving its reclaim policy Delete back: ${settled.refused}`, refused: true });
}

/** The pod the rollback was recorded for; a pod re-created under its name is another pod. */
function recordedPod(pods: Pod[], r: ProvisioningRollback): Pod | undefined {
  return pods.find((p) => p.metadata?.name === r.spec.pod.name && p.metadata?.uid === r.spec.pod.uid);
}
