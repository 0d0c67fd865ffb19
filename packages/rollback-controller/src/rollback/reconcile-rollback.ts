import { isDeepStrictEqual } from 'node:util';
import { classifyError, FirstSeen, isConflict, isNotFound, isRefusal, projectClaim } from '@topovol/shared';
import type { KubeClient, Logger, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { advanceRollback, RECREATE_RETRY_MS } from './advance-rollback.js';
import type { AdvanceDeps } from './advance-rollback.js';
import { decideMark } from './decide-mark.js';
import { decideRollback } from './decide-rollback.js';
import type { PinnedClaim } from './decide-rollback.js';
import { decideIntent } from './intent/decide-intent.js';
import { templatesTooLarge } from './intent/new-rollback.js';
import { heldByOthers } from './claim-template.js';
import { createdMs, isFinished, ProvisioningRollbacks } from './intent/provisioning-rollback.js';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';
import { MARK_REFUSED_RETRY_MS, writeMark } from './mark-actuator.js';
import type { MarkActuatorDeps } from './mark-actuator.js';
import { podRef } from './rollback-actuator.js';
import { countRollback } from './rollback-metrics.js';
import type { RollbackWorld } from './rollback-world.js';
import { historyKeyOfPod } from './workload.js';

export interface RollbackGlueDeps extends AdvanceDeps {
  world: RollbackWorld;
  /** The cached pod and record (the world holds what decisions read; these are what keys name). */
  pod(namespace: string, name: string): Pod | undefined;
  record(name: string): ProvisioningRollback | undefined;
  client: KubeClient;
  log: Logger;
  dryRun: boolean;
  marks: MarkActuatorDeps;
  /** How long a finished record is kept. */
  historyTtlMs: number;
  /** Notes what this process sees of a claim's provisioning (see provisioning-observation.ts). */
  observe(claim: PersistentVolumeClaim): void;
  enqueueRecord(name: string): void;
}

/** How soon a rollback one of whose writes the API server refused is tried again (as a refused re-create). */
export const REFUSED_WRITE_RETRY_MS = RECREATE_RETRY_MS;

/** How soon a pod whose claim changed under its rollback decision is looked at again (its claim's event also brings it back). */
export const CLAIM_CHANGED_RETRY_MS = 1000;

/** How soon an expired record whose delete found it changed since the cache showed it is decided again (its event also brings it back). */
export const STALE_RECORD_RETRY_MS = 1000;

/**
 * How soon an unfinished record is looked at again when no step asked for a time. Each step's write
 * to the record's status brings it back through its watch; this is the level-triggered net under that
 * (a step whose write changed nothing, an event lost to a handler error), so a rollback never stalls
 * for longer than this with nothing to show for it.
 */
export const UNFINISHED_RECORD_RESYNC_MS = 60_000;


/**
 * The rollback loop's glue, one method per kind of key: what each reads, which decision it asks,
 * what it remembers, and which writes it hands to the actuators. Decisions are pure; the first-seen
 * times they count grace periods from are kept here (`stuck`) and passed in.
 */
export class RollbackReconciler {
  /** Since when this process has seen each pod (by uid) stuck with a claim undecided. */
  private readonly stuck = new FirstSeen<true>();
  /** Since when this process has seen each pod ready to roll back on its node's state alone (NODE_STATE_DWELL_MS). */
  private readonly ready = new FirstSeen<true>();

  constructor(private readonly d: RollbackGlueDeps) {}

  /** pv/ keys: the volume's usage mark. */
  async volume(name: string): Promise<number | void> {
    const v = this.d.world.volume(name);
    if (!v) return;
    // What the claim shows now counts too (a watch may deliver the volume before the claim).
    const ref = v.spec?.claimRef;
    const c = ref?.name ? this.d.world.claim(ref.namespace ?? '', ref.name) : undefined;
    if (c) this.d.observe(c);
    if ((await writeMark(this.d.marks, decideMark(v, this.d.world))) === 'refused') return MARK_REFUSED_RETRY_MS;
  }

  /** The pod is gone: what was noted about it goes too (a pod deleted unscheduled has no update that ends its wait). */
  forgetPod(uid: string): void {
    this.stuck.forget(uid);
    this.ready.forget(uid);
  }

  /** How many pods this process remembers waiting (bounded by the pods that exist). */
  waitingPods(): number {
    return this.stuck.size;
  }

  /** pod/ keys: is the pod stuck, and can undoing its volumes be justified? */
  pod(namespace: string, name: string): Promise<number | void> {
    return countingErrors(async () => {
      const pod = this.d.pod(namespace, name);
      if (!pod) return;
      // The unfinished rollback of the pod's workload, if any, is finished before anything new is decided.
      const running = this.d.world.rollbacksOf(historyKeyOfPod(pod)).find((r) => !isFinished(r));
      if (running) {
        this.d.enqueueRecord(running.metadata!.name!);
        return;
      }
      const uid = pod.metadata?.uid ?? '';
      const decision = decideRollback(pod, this.d.world, this.stuck.get(uid)?.since, this.ready.get(uid)?.since);
      if (decision.kind !== 'none') this.d.log.debug('pod decided', { pod: `${namespace}/${name}`, decision: decision.kind, why: 'why' in decision ? decision.why : undefined });
      if (decision.kind === 'wait' && decision.firstSeen !== undefined) this.stuck.note(uid, true, decision.firstSeen);
      // The dwell counts only while the pod stays ready to roll back: anything else starts it again.
      if (decision.kind === 'wait' && decision.readyFirstSeen !== undefined) this.ready.note(uid, true, decision.readyFirstSeen);
      else if (!(decision.kind === 'wait' && decision.dwelling) && decision.kind !== 'rollback') this.ready.forget(uid);
      // A rollback's wait is forgotten once it is recorded: a read or a create that fails is retried
      // with the grace already spent, not a new one.
      if (decision.kind === 'rollback') {
        // Under --dry-run the checks below run too (they read, and send a server-side dry run), so
        // that what it reports is what a real run would do; a decision reported already is not
        // checked again (nothing is recorded, so every look at the pod decides the same).
        if (this.d.dryRun && this.d.actuator.reportedDryRun(pod, decision)) return;
        // The record names the namespace by uid, read now, then the pod: a pod the server still has
        // after that read was in that namespace (a namespace of that name deleted and made again
        // since would have lost its pods first). A cached pod the server no longer has is not
        // rolled back: its claims may be another namespace's by now; nor is one whose namespace is
        // being deleted (its claims go with it).
        const ns = await this.d.reads.namespace(namespace);
        const livePod = ns && !ns.deleting ? await this.d.reads.livePod(namespace, name, uid) : undefined;
        if (!ns || ns.deleting || !livePod) {
          this.d.log.info('not rolling back: the server no longer has the pod, or its namespace is gone or being deleted', { pod: `${namespace}/${name}`, namespace: !ns ? 'gone' : ns.deleting ? 'deleting' : 'there' });
          this.stuck.forget(uid);
          return;
        }
        // The decision read the cache's pod, which may be behind the server's: a binding cycle
        // begun since (kube-scheduler's nomination) or ended (the pod bound) leaves its evidence
        // stale. Decided again on the server's pod; nothing is recorded unless that decision still
        // rolls back, and it is the one recorded. The pod's next event brings it back.
        const current = decideRollback(livePod, this.d.world, this.stuck.get(uid)?.since, this.ready.get(uid)?.since);
        if (current.kind !== 'rollback') {
          this.d.log.info('not rolling back yet: the pod as the server has it is decided otherwise (the cache is behind it)', { pod: `${namespace}/${name}`, decision: current.kind, nominatedNode: livePod.status?.nominatedNodeName, nodeName: livePod.spec?.nodeName });
          return;
        }
        // The record keeps each claim's labels, annotations and owners to re-create it from, which
        // the claim cache does not hold (projectClaim): they are read now, from the claim as decided
        // on. One the server has changed in what the decision read is decided again once the cache
        // shows it.
        const live = await this.liveClaims(namespace, current.pinned);
        if (!live) {
          this.d.log.info('not rolling back yet: a claim changed since the cache showed it; deciding again', { pod: `${namespace}/${name}` });
          return CLAIM_CHANGED_RETRY_MS;
        }
        // Refused before anything is recorded or deleted: a record too large for etcd could be
        // created, then fail the status writes that re-create its claims.
        const refused = templatesTooLarge(live) ?? (await this.recreateRefused(live));
        try {
          await this.d.actuator.decide(pod, refused ? { kind: 'refuse', why: refused } : { ...current, pinned: live }, ns.uid);
        } catch (err) {
          // The record's create refused: nothing was done yet; the wait stays spent.
          if (!isRefusal(err)) throw err;
          this.d.actuator.reportWriteRefused(pod, undefined, err);
          return REFUSED_WRITE_RETRY_MS;
        }
        this.stuck.forget(uid);
        this.ready.forget(uid);
        return;
      }
      if (decision.kind !== 'wait') this.stuck.forget(uid);
      await this.d.actuator.decide(pod, decision);
      if (decision.kind === 'wait') return decision.ms;
    });
  }

  /**
   * The pinned claims as the server has them, or undefined if one is gone, re-created, or changed
   * in what the decision read. A newer version that differs only in what the cache does not keep
   * (a label a GitOps tool rewrites, an annotation) is the claim decided on: its template is read
   * now, with its resourceVersion, so a claim written often is still rolled back.
   */
  private async liveClaims(namespace: string, pinned: PinnedClaim[]): Promise<PinnedClaim[] | undefined> {
    const live = await Promise.all(pinned.map((p) => this.d.reads.claim(namespace, p.claim.metadata?.name ?? '')));
    const same = pinned.every((p, i) => {
      const l = live[i];
      if (!l || l.metadata?.uid !== p.claim.metadata?.uid) return false;
      return l.metadata?.resourceVersion === p.claim.metadata?.resourceVersion || sameDecisionInputs(l, p.claim);
    });
    return same ? pinned.map((p, i) => ({ ...p, claim: live[i]! })) : undefined;
  }

  /**
   * Why one of the claims could not be created again once deleted (recreate-check.ts), or carries a
   * finalizer its copy would not get back (heldByOthers), or undefined.
   */
  private async recreateRefused(pinned: PinnedClaim[]): Promise<string | undefined> {
    for (const p of pinned) {
      const check = await this.d.reads.recreateCheck(p.claim);
      if (check.refused) return `claim ${p.claim.metadata?.name} could not be created again once deleted: the API server refuses its copy (dry run): ${check.refused}`;
      const held = heldByOthers(p.claim, check.finalizers);
      if (held) return held;
    }
    return undefined;
  }

  /** rb/ keys: advance a rollback in progress, or expire a finished one's record. */
  record(name: string): Promise<number | void> {
    return countingErrors(async () => {
      const r = this.d.record(name);
      if (!r) return;
      if (isFinished(r)) {
        const done = Date.parse(r.status?.completionTime ?? '') || createdMs(r);
        const left = done + this.d.historyTtlMs - Date.now();
        if (left > 0) return left;
        // Only the record as decided on (uid + resourceVersion): one whose status or completion a
        // lagging cache has not shown yet is decided again, as the Job TTL controller re-reads its
        // Job before deleting (pkg/controller/ttlafterfinished). A record in progress holds the
        // claims to re-create; deleting it would lose them.
        return this.d.client.delete(ProvisioningRollbacks, name, undefined, { preconditions: { uid: r.metadata?.uid, resourceVersion: r.metadata?.resourceVersion } }).then(
          () => undefined,
          (err: unknown) => {
            if (isNotFound(err)) return undefined;
            if (isConflict(err)) return STALE_RECORD_RETRY_MS;
            throw err;
          },
        );
      }
      if (this.d.dryRun) return;
      try {
        return (await advanceRollback(this.d, r, decideIntent(r, (ns, n) => this.d.world.claim(ns, n)))) ?? UNFINISHED_RECORD_RESYNC_MS;
      } catch (err) {
        // A refused write with no fallback of its own (the record's status, the claim's fence): the
        // same write is refused again until someone changes the rules, and the claim may be
        // deleted and not yet back. Said on the pod and tried a minute apart, not after a backoff
        // that doubles to many minutes.
        if (!isRefusal(err)) throw err;
        this.d.actuator.reportWriteRefused(podRef(r), r.metadata?.name, err);
        return REFUSED_WRITE_RETRY_MS;
      }
    });
  }
}

/** Whether two versions of a claim agree on everything the cache keeps of it (projectClaim), the resourceVersion aside. */
function sameDecisionInputs(a: PersistentVolumeClaim, b: PersistentVolumeClaim): boolean {
  const inputs = (c: PersistentVolumeClaim): unknown => {
    const p = projectClaim(c);
    return JSON.parse(JSON.stringify({ ...p, metadata: { ...p.metadata, resourceVersion: undefined } }));
  };
  return isDeepStrictEqual(inputs(a), inputs(b));
}

/**
 * Conflicts are retried on fresh data as a matter of course, and a write held by the leader-election
 * fence was not sent; anything else is a failure, counted.
 */
async function countingErrors(f: () => Promise<number | void>): Promise<number | void> {
  try {
    return await f();
  } catch (err) {
    const kind = classifyError(err).kind;
    if (kind !== 'Conflict' && kind !== 'Fenced') countRollback('error');
    throw err;
  }
}
