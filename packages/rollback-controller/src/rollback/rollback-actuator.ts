import { failpoint, isAlreadyExists, isConflict, isNotFound, Resources } from '@topovol/shared';
import type { EventRecorder, KubeClient, KubeObject, Logger, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { isDeepStrictEqual } from 'node:util';
import { claimFromTemplate, claimTemplate } from './claim-template.js';
import type { RollbackDecision } from './decide-rollback.js';
import type { IntentStep } from './intent/decide-intent.js';
import { newRollback } from './intent/new-rollback.js';
import { isFinished, ProvisioningRollbacks } from './intent/provisioning-rollback.js';
import type { ClaimState, ClaimTemplate, Condition, ProvisioningRollback, ProvisioningRollbackStatus, RollbackClaim, RollbackPhase } from './intent/provisioning-rollback.js';
import { Reasons } from './marks.js';
import { countRecreated, countRollback } from './rollback-metrics.js';

export interface RollbackActuatorDeps {
  client: KubeClient;
  events: EventRecorder;
  log: Logger;
  dryRun: boolean;
  /** Why the volume may hold data now (live label, cached evidence), or undefined while it is provably unused. */
  volumeUse(volumeName: string): Promise<string | undefined>;
  /** Tests only: runs between the last re-check and the claim's delete, to widen the race window at will. */
  beforeClaimDelete?: (claim: RollbackClaim) => Promise<void>;
}

const nowRfc3339 = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * Carries out rollbacks. A rollback is first recorded as a ProvisioningRollback (its claims and
 * their templates, taken from the claims as decided on), then advanced one write at a time, each
 * recorded in its status, so that a crash or a new leader finishes it exactly once. Every write has
 * a precondition (uid + resourceVersion on deletes, resourceVersion on status), and right before a
 * claim is deleted the claim, the pod and the volume are read again from the server.
 */
export class RollbackActuator {
  /** --dry-run: the decisions already reported (pod uid / evidence time). */
  private readonly dryRunReported = new Set<string>();

  constructor(private readonly d: RollbackActuatorDeps) {}

  /** Acts on a decision about a pod that has no rollback in progress. */
  async decide(pod: Pod, r: RollbackDecision): Promise<void> {
    switch (r.kind) {
      case 'none':
      case 'wait':
        return;
      case 'refuse':
        this.d.log.info('rollback refused', { pod: podKey(pod), why: r.why });
        this.d.events.event(pod, 'Warning', Reasons.RollbackRefused, `not rolling back provisioning: ${r.why}`);
        countRollback('refused');
        return;
      case 'limit':
        this.d.log.info('rollback limit reached', { pod: podKey(pod), why: r.why });
        this.d.events.event(pod, 'Warning', Reasons.RollbackLimit, r.why);
        countRollback('limited');
        return;
      case 'rollback':
        return this.start(pod, r);
    }
  }

  private async start(pod: Pod, r: Extract<RollbackDecision, { kind: 'rollback' }>): Promise<void> {
    const names = r.pinned.map((p) => p.claim.metadata?.name).join(', ');
    if (this.d.dryRun) {
      // Nothing is recorded, so every re-sync decides the same again: report each decision once.
      const decision = `${pod.metadata?.uid}/${r.evidenceTime}`;
      if (this.dryRunReported.has(decision)) return;
      this.dryRunReported.add(decision);
      this.d.log.info('rolling back provisioning', { pod: podKey(pod), claims: names, why: r.why, attempt: r.attempt, dryRun: true });
      countRollback('dry_run');
      return;
    }
    this.d.log.info('rolling back provisioning', { pod: podKey(pod), claims: names, why: r.why, attempt: r.attempt, dryRun: false });
    const record = newRollback(pod, r.pinned, r.why, r.attempt, r.evidenceTime);
    try {
      await this.d.client.create(ProvisioningRollbacks, record);
    } catch (err) {
      // Recorded already (a crash after the create, or another leader): it is advanced from its record.
      if (!isAlreadyExists(err)) throw err;
      return;
    }
    failpoint('rollback-intent-recorded');
    // Announced by advance() once its first step is written: also after a crash right here.
  }

  /** The rollback's Events on the pod, its claims and their volumes, from the record alone. */
  private announce(r: ProvisioningRollback): void {
    countRollback('rolled_back');
    const names = r.spec.claims.map((c) => c.name).join(', ');
    this.d.events.event(podRef(r), 'Normal', Reasons.RollbackStarted, `pod cannot run on node ${r.spec.node} (${r.spec.reason}); rolling back unused volume(s) of claim(s) ${names} so that it can be scheduled elsewhere (ProvisioningRollback ${r.metadata?.name})`);
    for (const c of r.spec.claims) {
      const policy = c.reclaimPolicy ?? 'Delete';
      const fate = policy === 'Delete' ? 'deleted by its provisioner' : `kept: its reclaim policy is ${policy}, so an administrator has to remove it`;
      const claim: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: c.name, namespace: r.spec.pod.namespace, uid: c.uid } };
      const volume: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: c.volume } };
      this.d.events.event(claim, 'Normal', Reasons.RollbackStarted, `deleting and re-creating this claim: its volume ${c.volume} was provisioned for node ${r.spec.node} and never used; ${r.spec.reason}`);
      this.d.events.event(volume, 'Normal', Reasons.RollbackStarted, `claim ${c.name} is re-created; this unused volume is released and ${fate}`);
    }
  }

  /** Carries out the next steps of a rollback in progress; stops at the first that changes the plan. */
  async advance(r: ProvisioningRollback, steps: IntentStep[]): Promise<number | undefined> {
    let current = r;
    // Events first, then the Started condition that says they were sent: a process that dies in
    // between (or right after creating the record) leaves it to its successor to send them again
    // (the same Event, counted twice) rather than never.
    if (!isFinished(current) && !current.status?.conditions?.some((c) => c.type === STARTED)) {
      this.announce(current);
      current = await this.writeStatus(current, { conditions: withCondition(current, { type: STARTED, status: 'True', reason: 'Announced', message: current.spec.reason }) });
    }
    for (const s of steps) {
      switch (s.kind) {
        case 'markDeleting':
          current = await this.setClaim(current, s.claim.name, 'Deleting');
          break;
        case 'deleteClaim': {
          const outcome = await this.deleteClaim(current, s.claim);
          current = await this.setClaim(current, s.claim.name, outcome.state, undefined, outcome.message);
          if (outcome.state === 'Kept') {
            this.d.events.event(podRef(current), 'Normal', Reasons.RollbackAborted, `rollback stopped before claim ${s.claim.name} was deleted: ${outcome.message}`);
            countRollback('aborted');
            return undefined;
          }
          break;
        }
        case 'keep':
          current = await this.setClaim(current, s.claim.name, 'Kept', undefined, s.why);
          break;
        case 'createClaim': {
          const uid = await this.createClaim(current, s.claim);
          if (uid === undefined) return 1_000;
          current = await this.setClaim(current, s.claim.name, 'Recreated', uid);
          break;
        }
        case 'noteRecreated':
          current = await this.setClaim(current, s.claim.name, 'Recreated', s.uid);
          break;
        case 'waitTerminating':
          // Its protection finalizer: a pod holds it (see the raced check), or it is going.
          return 1_000;
        case 'finish':
          await this.finish(current, s.phase);
          return undefined;
      }
    }
    return undefined;
  }

  /** The pod and the volume as the server has them now; then the delete, conditional on the claim decided on. */
  private async deleteClaim(r: ProvisioningRollback, c: RollbackClaim): Promise<{ state: ClaimState; message?: string }> {
    const ns = r.spec.pod.namespace;
    const live = await this.getOrUndefined<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c.name, ns);
    // The record says Deleting (written before the delete is sent): a claim gone or going since was
    // deleted by us before a crash, or by someone else meanwhile. Either way it is re-created from
    // our own template, in its own namespace: a claim is never lost.
    if (!live || live.metadata?.uid !== c.uid || live.metadata?.deletionTimestamp) return { state: 'Deleted' };
    // A newer resourceVersion than the decision's: the decision was made on a cache a write or two
    // behind (a binder's annotation, a protection finalizer). Still the claim decided on if bound to
    // the same volume and it would be re-created the same; otherwise it is kept. The delete is then
    // conditional on the version just checked.
    const changed = claimChange(live, c);
    if (changed) return { state: 'Kept', message: `claim ${c.name} changed since the rollback was decided (${changed})` };
    const pod = await this.getOrUndefined<Pod>(Resources.pods, r.spec.pod.name, ns);
    if (!pod || pod.metadata?.uid !== r.spec.pod.uid) return { state: 'Kept', message: `pod ${r.spec.pod.name} is gone` };
    if (pod.spec?.nodeName) return { state: 'Kept', message: `pod ${r.spec.pod.name} was scheduled to node ${pod.spec.nodeName}` };
    const used = await this.d.volumeUse(c.volume);
    if (used) return { state: 'Kept', message: `volume ${c.volume} may hold data: ${used}` };
    await this.d.beforeClaimDelete?.(c);
    try {
      await this.d.client.delete(Resources.persistentVolumeClaims, c.name, ns, { preconditions: { uid: c.uid, resourceVersion: live.metadata?.resourceVersion } });
    } catch (err) {
      if (isConflict(err)) return { state: 'Kept', message: `claim ${c.name} changed since the rollback was decided` };
      if (isNotFound(err)) return { state: 'Kept', message: `claim ${c.name} was deleted by someone else` };
      throw err;
    }
    failpoint('rollback-claim-deleted');
    // The only window no precondition closes: the scheduler binding the pod between the re-check
    // and the delete. The claim then stays Terminating while the pod exists; say so.
    const after = await this.getOrUndefined<Pod>(Resources.pods, r.spec.pod.name, ns);
    if (after?.spec?.nodeName) {
      countRollback('raced');
      this.d.events.event(after, 'Warning', Reasons.RollbackRaced, `scheduled to node ${after.spec.nodeName} while claim ${c.name} was being deleted for a rollback: the claim stays Terminating while this pod exists (its volume was never used); delete the pod to let the claim be re-created`);
    }
    return { state: 'Deleted' };
  }

  /** Creates the claim from the recorded template; the re-created uid, or undefined while the old one is still there. */
  private async createClaim(r: ProvisioningRollback, c: RollbackClaim): Promise<string | undefined> {
    const ns = r.spec.pod.namespace;
    try {
      const created = await this.d.client.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimFromTemplate(c.template, ns, c.name));
      failpoint('rollback-claim-recreated');
      countRecreated();
      this.d.events.event(created, 'Normal', Reasons.ClaimRecreated, `re-created by provisioning rollback ${r.metadata?.name} for pod ${r.spec.pod.name}; Pending until the pod is scheduled again`);
      return created.metadata?.uid;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const live = await this.getOrUndefined<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c.name, ns);
      return live && live.metadata?.uid !== c.uid ? live.metadata?.uid : undefined;
    }
  }

  private async finish(r: ProvisioningRollback, phase: RollbackPhase): Promise<void> {
    const message = phase === 'Completed' ? 'claims re-created; the pod can be scheduled on another node' : 'stopped before any claim was deleted';
    const condition = { type: 'Complete', status: 'True' as const, reason: phase, message };
    await this.writeStatus(r, { phase, message, completionTime: nowRfc3339(), conditions: withCondition(r, condition) });
    if (phase === 'Completed') this.d.events.event(podRef(r), 'Normal', Reasons.RollbackCompleted, `provisioning rollback ${r.metadata?.name}: ${message}`);
  }

  /** One claim's state in the record, written with the record's resourceVersion (a stale writer fails). */
  private async setClaim(r: ProvisioningRollback, name: string, state: ClaimState, uid?: string, message?: string): Promise<ProvisioningRollback> {
    const claims = [...(r.status?.claims ?? []).filter((c) => c.name !== name), { name, state, uid, message }];
    const phase: RollbackPhase = claims.some((c) => c.state === 'Deleted' || c.state === 'Recreated') ? 'Recreating' : 'Deleting';
    return this.writeStatus(r, { phase, claims });
  }

  /** The record's status with `changes`, written with its resourceVersion (a stale writer fails). */
  private writeStatus(r: ProvisioningRollback, changes: Partial<ProvisioningRollbackStatus>): Promise<ProvisioningRollback> {
    return this.d.client.replaceStatus(ProvisioningRollbacks, { ...r, status: { ...r.status, ...changes } });
  }

  private async getOrUndefined<T extends KubeObject>(resource: typeof Resources.pods, name: string, ns: string): Promise<T | undefined> {
    try {
      return await this.d.client.get<T>(resource, name, ns);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** What differs, for the rollback, between the claim decided on and the claim now; undefined when nothing does. */
function claimChange(live: PersistentVolumeClaim, c: RollbackClaim): string | undefined {
  if (live.metadata?.resourceVersion === c.resourceVersion) return undefined;
  if (live.spec?.volumeName !== c.volume) return `now bound to ${live.spec?.volumeName ?? 'no volume'}`;
  const canonical = (t: ClaimTemplate): unknown => JSON.parse(JSON.stringify(t));
  if (!isDeepStrictEqual(canonical(claimTemplate(live)), canonical(c.template))) return 'its labels, annotations, owners or spec';
  return undefined;
}

const STARTED = 'Started';

/** The record's conditions with `c` set (replacing one of its type), stamped now. */
function withCondition(r: ProvisioningRollback, c: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>): Condition[] {
  const others = (r.status?.conditions ?? []).filter((x) => x.type !== c.type);
  return [...others, { ...c, lastTransitionTime: nowRfc3339(), observedGeneration: r.metadata?.generation }];
}

const podKey = (p: Pod): string => `${p.metadata?.namespace}/${p.metadata?.name}`;

/** The pod a record is about, as an Event target. */
const podRef = (r: ProvisioningRollback): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: r.spec.pod.name, namespace: r.spec.pod.namespace, uid: r.spec.pod.uid } });
