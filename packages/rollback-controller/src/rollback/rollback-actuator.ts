import { randomBytes } from 'node:crypto';
import { errorMessage, failpoint, isAlreadyExists, isNamespaceGone, isNotFoundNamed, isRefusal, Resources } from '@topovol/shared';
import type { EventRecorder, KubeClient, KubeObject, Logger, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { claimFromTemplate } from './claim-template.js';
import type { RollbackDecision } from './decide-rollback.js';
import { newRollback } from './intent/new-rollback.js';
import { ProvisioningRollbacks, STARTED_CONDITION } from './intent/provisioning-rollback.js';
import type { ClaimState, Condition, ProvisioningRollback, ProvisioningRollbackStatus, RollbackClaim, RollbackPhase } from './intent/provisioning-rollback.js';
import type { SettlePlan } from './intent/held-volume.js';
import { ANN_KEPT_BY, ANN_RECLAIM_HELD, ANN_RETAINED_BECAUSE, Reasons } from './marks.js';
import { RepeatPacer } from './repeat-pacer.js';
import { countRecreated, countRetained, countRollback } from './rollback-metrics.js';

/** The client calls the rollback actuator makes: the record's create and status, the claims' delete, fence and create. */
export type RollbackWrites = Pick<KubeClient, 'create' | 'delete' | 'patch' | 'replaceStatus'>;

export interface RollbackActuatorDeps {
  client: RollbackWrites;
  /** `flush`: announce waits for its Events to be written before it says so in the record. */
  events: Pick<EventRecorder, 'event' | 'flush'>;
  log: Logger;
  dryRun: boolean;
}

/**
 * The fence's annotation value: the rollback's name and a random suffix, so that it differs from
 * whatever the claim carried before (see fenceClaim).
 */
function keptByValue(r: ProvisioningRollback): string {
  return `${r.metadata?.name ?? ''}/${randomBytes(4).toString('hex')}`;
}

const nowRfc3339 = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * The rollback loop's writes, and only writes: the record of a rollback (a ProvisioningRollback:
 * its claims and their templates, taken from the claims as decided on), its status, one write per
 * step (see advance-rollback.ts), the claims' deletes and re-creates, and the Events. Every write
 * has a precondition (uid + resourceVersion on deletes, resourceVersion on status): a stale writer fails.
 */
export class RollbackActuator {
  /** --dry-run: the decisions already reported (pod uid / evidence time). */
  private readonly dryRunReported = new Set<string>();
  /** Warnings of refused requests, said again at most every 5 minutes while unchanged (the recorder's refill). */
  private readonly repeats = new RepeatPacer(5 * 60_000);

  constructor(private readonly d: RollbackActuatorDeps) {}

  /**
   * Acts on a decision about a pod that has no rollback in progress; a rollback is recorded with
   * the uid of the pod's namespace as the server has it (`namespaceUID`).
   */
  async decide(pod: Pod, r: RollbackDecision, namespaceUID?: string): Promise<void> {
    switch (r.kind) {
      case 'none':
      case 'wait':
        return;
      // Said again on every look at the pod (each of its updates, each new failure Event): logged
      // at info when the Event is recorded, so the recorder's spam filter paces both.
      case 'refuse': {
        const recorded = this.d.events.event(pod, 'Warning', Reasons.RollbackRefused, `not rolling back provisioning: ${r.why}`);
        this.d.log[recorded ? 'info' : 'debug']('rollback refused', { pod: podKey(pod), why: r.why });
        countRollback('refused');
        return;
      }
      case 'limit': {
        const recorded = this.d.events.event(pod, 'Warning', Reasons.RollbackLimit, r.why);
        this.d.log[recorded ? 'info' : 'debug']('rollback limit reached', { pod: podKey(pod), why: r.why });
        countRollback('limited');
        return;
      }
      case 'rollback':
        return this.start(pod, r, namespaceUID);
    }
  }

  /** Under --dry-run, whether this rollback decision (the pod's, on this evidence) was reported already. */
  reportedDryRun(pod: Pod, r: Extract<RollbackDecision, { kind: 'rollback' }>): boolean {
    return this.dryRunReported.has(dryRunKey(pod, r));
  }

  private async start(pod: Pod, r: Extract<RollbackDecision, { kind: 'rollback' }>, namespaceUID: string | undefined): Promise<void> {
    const names = r.pinned.map((p) => p.claim.metadata?.name).join(', ');
    if (this.d.dryRun) {
      // Nothing is recorded, so every re-sync decides the same again: report each decision once.
      const decision = dryRunKey(pod, r);
      if (this.dryRunReported.has(decision)) return;
      this.dryRunReported.add(decision);
      this.d.log.info('rolling back provisioning', { pod: podKey(pod), claims: names, why: r.why, attempt: r.attempt, dryRun: true });
      countRollback('dry_run');
      return;
    }
    this.d.log.info('rolling back provisioning', { pod: podKey(pod), claims: names, why: r.why, attempt: r.attempt, dryRun: false });
    const record = newRollback(pod, r.pinned, r.why, r.attempt, r.evidenceTime, namespaceUID);
    try {
      const stored = await this.d.client.create(ProvisioningRollbacks, record);
      // An API server with the CRD of an older Topovol drops the field it does not know (Helm
      // never upgrades crds/): its re-creates then fall back to comparing creation times.
      if (namespaceUID && stored.spec?.pod?.namespaceUID !== namespaceUID) {
        this.d.log.warn('the ProvisioningRollback CRD is older than this Topovol and dropped spec.pod.namespaceUID: apply config/crd (docs/install.md)', { rollback: record.metadata?.name });
      }
    } catch (err) {
      // Recorded already (a crash after the create, or another leader): it is advanced from its record.
      if (!isAlreadyExists(err)) throw err;
      return;
    }
    failpoint('rollback-intent-recorded');
    // Announced when the record is first advanced (advance-rollback.ts): also after a crash right here.
  }

  /** Sends the rollback's Events, then writes the Started condition that says they were sent. */
  async announce(r: ProvisioningRollback): Promise<ProvisioningRollback> {
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
    // The recorder writes Events in the background: the condition must not say they were sent
    // before they were (a process killed in between would leave them unsent for good).
    await this.d.events.flush();
    const announced = await this.writeStatus(r, { conditions: withCondition(r, { type: STARTED_CONDITION, status: 'True', reason: 'Announced', message: r.spec.reason }) });
    // Counted once the condition is written: a status write that failed (and is retried) is not a second rollback.
    countRollback('rolled_back');
    failpoint('rollback-announced');
    return announced;
  }

  /**
   * Deletes the claim with uid + resourceVersion preconditions. 'gone' when it no longer exists.
   * A precondition that does not hold (someone wrote it, or deleted and re-created it, since it was
   * checked) rejects with the API server's 409 Conflict: nothing was deleted, and the caller's
   * queue looks again on fresh data, with backoff.
   */
  async deleteClaim(r: ProvisioningRollback, c: RollbackClaim, resourceVersion: string | undefined): Promise<'deleted' | 'gone'> {
    try {
      await this.d.client.delete(Resources.persistentVolumeClaims, c.name, r.spec.pod.namespace, { preconditions: { uid: c.uid, resourceVersion } });
    } catch (err) {
      // Only the server's own NotFound for this claim (a proxy's bare 404 says nothing about it).
      if (isNotFoundNamed(err, Resources.persistentVolumeClaims.plural, c.name)) return 'gone';
      throw err;
    }
    failpoint('rollback-claim-deleted');
    return 'deleted';
  }

  /**
   * Fences a claim the rollback keeps: a write conditional on the resourceVersion it was checked at
   * (the rollback's name in an annotation), so that no delete of this claim sent earlier, with that
   * or an older resourceVersion as its precondition, can land any more. 'gone' when the claim no
   * longer exists (such a delete landed first). A write since the check rejects with 409 Conflict.
   *
   * The fence works only if the write moves the resourceVersion, and kube-apiserver stores nothing
   * for a patch that changes nothing: a claim already carrying the value (a tenant who wrote the
   * rollback's name there, which anyone can compute, or a fence left by an expired record whose
   * name is used again) would keep its resourceVersion, and the delete would still land. So each
   * fence writes a value of its own, and one answered with the resourceVersion it was sent with
   * is an error (retried) rather than a fence.
   */
  async fenceClaim(r: ProvisioningRollback, c: RollbackClaim, resourceVersion: string | undefined): Promise<'fenced' | 'gone'> {
    const patch = { metadata: { uid: c.uid, resourceVersion, annotations: { [ANN_KEPT_BY]: keptByValue(r) } } };
    let written: PersistentVolumeClaim;
    try {
      written = await this.d.client.patch<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c.name, r.spec.pod.namespace, 'merge', patch);
    } catch (err) {
      // Only the server's own NotFound for this claim (a proxy's bare 404 says nothing about it).
      if (isNotFoundNamed(err, Resources.persistentVolumeClaims.plural, c.name)) return 'gone';
      throw err;
    }
    if (resourceVersion !== undefined && written.metadata?.resourceVersion === resourceVersion) {
      throw new Error(`the fence of claim ${r.spec.pod.namespace}/${c.name} changed nothing (resourceVersion still ${resourceVersion}): a delete sent before could still land`);
    }
    failpoint('rollback-claim-fenced');
    return 'fenced';
  }

  /**
   * Sets the volume's reclaim policy aside right before its claim's delete: `Retain`, with `Delete`
   * remembered in ANN_RECLAIM_HELD (held-volume.ts), conditional on the volume as read. Nothing
   * when the volume is gone (its claim's delete then loses nothing). 'refused' with the API
   * server's refusal (a policy or webhook guarding volumes): nothing was written.
   */
  async holdReclaim(volume: string, resourceVersion: string | undefined): Promise<'held' | 'gone' | { refused: string }> {
    const patch = { metadata: { resourceVersion, annotations: { [ANN_RECLAIM_HELD]: 'Delete' } }, spec: { persistentVolumeReclaimPolicy: 'Retain' } };
    const written = await this.patchVolume(volume, patch);
    if (written !== 'patched') return written;
    this.d.log.info('volume held Retain while its claim is deleted', { volume });
    failpoint('rollback-volume-held');
    return 'held';
  }

  /**
   * Settles a held volume (decideSettle): `Delete` given back, or left `Retain` with why (a Warning
   * on the volume, a log line, and the metric once the annotation saying why is written), or only
   * the hold's mark removed. A write the API server refuses returns its reason: the volume stays
   * `Retain` (what a refused `retain` or `unmark` meant to leave anyway, the annotations aside; the
   * hold's mark then stays, so a later look says it again, aggregated into the same Event); a
   * refused `restore` is the caller's to turn into `retain`.
   */
  async settleVolume(r: ProvisioningRollback, c: RollbackClaim, plan: SettlePlan): Promise<'settled' | { refused: string }> {
    if (plan.kind === 'none') return 'settled';
    const volume = c.volume;
    const metadata = { resourceVersion: plan.resourceVersion, annotations: { [ANN_RECLAIM_HELD]: null, ...(plan.kind === 'retain' ? { [ANN_RETAINED_BECAUSE]: plan.why } : {}) } };
    const patch = plan.kind === 'restore' ? { metadata, spec: { persistentVolumeReclaimPolicy: 'Delete' } } : { metadata };
    if (plan.kind === 'retain') {
      // Said before the write that ends the hold, and flushed, as announce does: after that write
      // nothing would look at the volume again, and a process killed in between would leave it unsaid.
      const advice = plan.refused ? 'no pod used it since the hold: give it its Delete back once the API server allows it' : 'it may hold data: recover it, or delete it once it is not needed';
      this.d.log.warn(plan.refused ? 'volume left Retain: the API server refused giving its Delete back' : 'volume left Retain: a pod may have used it while its claim was deleted', { volume, rollback: r.metadata?.name, claim: `${r.spec.pod.namespace}/${c.name}`, why: plan.why });
      const v: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: volume } };
      this.d.events.event(v, 'Warning', Reasons.VolumeRetained, `reclaim policy left Retain (it was Delete, held by provisioning rollback ${r.metadata?.name} across the delete of claim ${r.spec.pod.namespace}/${c.name}): ${plan.why}; ${advice}`);
      await this.d.events.flush();
    }
    const written = await this.patchVolume(volume, patch);
    if (written === 'patched' && plan.kind === 'restore') failpoint('rollback-volume-settled');
    if (written === 'gone') return 'settled';
    // Counted once: the write that lands ends the hold, so no later look plans it again.
    if (plan.kind === 'retain' && written === 'patched') countRetained();
    if (written !== 'patched') {
      if (plan.kind !== 'restore') this.d.log.warn("the API server refused the volume's annotations that end its hold: it stays Retain with them", { volume, rollback: r.metadata?.name, refused: written.refused });
      return written;
    }
    if (plan.kind !== 'retain') this.d.log.info(plan.kind === 'restore' ? 'reclaim policy Delete given back to the volume' : 'volume no longer held: its reclaim policy was changed meanwhile', { volume, rollback: r.metadata?.name });
    return 'settled';
  }

  /**
   * A merge patch of a volume; 'gone' when the server has no volume of that name, the server's
   * reason when it refused the write (403, 422, 400: the same write would be refused again).
   */
  private async patchVolume(name: string, patch: object): Promise<'patched' | 'gone' | { refused: string }> {
    try {
      await this.d.client.patch(Resources.persistentVolumes, name, undefined, 'merge', patch);
      return 'patched';
    } catch (err) {
      if (isNotFoundNamed(err, Resources.persistentVolumes.plural, name)) return 'gone';
      if (isRefusal(err)) return { refused: errorMessage(err) };
      throw err;
    }
  }

  /** The scheduler bound the pod between the re-check and the claim's delete: say so on the pod. */
  reportRaced(pod: Pod, c: RollbackClaim): void {
    countRollback('raced');
    this.d.events.event(pod, 'Warning', Reasons.RollbackRaced, `scheduled to node ${pod.spec?.nodeName} while claim ${c.name} was being deleted for a rollback: the claim stays Terminating while this pod exists, and this pod may use its volume ${c.volume}, whose reclaim policy is left Retain so that nothing it writes is deleted with the claim; once the pod is gone the claim is re-created, and volume ${c.volume} stays for an administrator to recover or delete`);
  }

  /**
   * A deleted claim not re-created: its namespace is being deleted, is gone, or is another made
   * since under its name (`why`). Logged and counted as aborted (an Event could not be written in
   * that namespace any more, or would be in someone else's).
   */
  reportAbandoned(r: ProvisioningRollback, c: RollbackClaim, why: string): void {
    this.d.log.warn('claim not re-created: its namespace was deleted', { rollback: r.metadata?.name, namespace: r.spec.pod.namespace, claim: c.name, why });
    countRollback('aborted');
  }

  /**
   * A write of the rollback the API server refused (a policy or webhook on the record or the claims,
   * a narrowed role), thrown by a step that has no refusal of its own to fall back on: the record's
   * create or status, the claim's fence. Said on the pod (with the rollback's name, when it has
   * one), logged and counted as an error; the caller tries again a minute later.
   */
  reportWriteRefused(pod: KubeObject, rollback: string | undefined, err: unknown): void {
    const what = rollback ? `provisioning rollback ${rollback} cannot go on` : 'provisioning rollback cannot start';
    const message = `${what}: the API server refused one of its requests; trying again: ${errorMessage(err)}`;
    const said = this.said(pod, Reasons.RollbackWriteRefused, message);
    this.d.log[said ? 'warn' : 'debug'](`${what}: the API server refused a request; trying again`, { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, rollback, error: errorMessage(err) });
    countRollback('error');
  }

  /**
   * A Warning said again at every look while the same request is refused: paced (RepeatPacer), so
   * that it leaves the pod's Event budget to what comes after. Whether it was said.
   */
  private said(obj: KubeObject, reason: string, message: string): boolean {
    const key = `${obj.metadata?.uid ?? ''}/${reason}`;
    return this.repeats.due(key, message, Date.now()) && this.d.events.event(obj, 'Warning', reason, message);
  }

  /**
   * The rollback stopped before this claim was deleted. Normal when the cluster moved on (the pod
   * scheduled, the volume used); a Warning, logged, when the API server refused the claim's delete
   * or its volume's hold: a policy or webhook an operator set up, or a role narrowed, says no.
   */
  reportAborted(r: ProvisioningRollback, c: RollbackClaim, why: string, refused = false): void {
    const message = `rollback stopped before claim ${c.name} was deleted: ${why}`;
    this.d.events.event(podRef(r), refused ? 'Warning' : 'Normal', Reasons.RollbackAborted, message);
    if (refused) this.d.log.warn('provisioning rollback aborted: the API server refused a request', { rollback: r.metadata?.name, pod: `${r.spec.pod.namespace}/${r.spec.pod.name}`, claim: c.name, why });
    countRollback('aborted');
  }

  /**
   * Creates the claim from the recorded template: its uid; `exists` when a claim of that name
   * exists; `namespaceGone` when its namespace is gone or being deleted (never retried: a namespace
   * of that name made later is someone else's).
   */
  async createClaim(r: ProvisioningRollback, c: RollbackClaim): Promise<{ uid: string | undefined } | 'exists' | 'namespaceGone' | 'refused'> {
    // A create carries no precondition of the record's: the record is written first, unchanged, with
    // its resourceVersion, so that one decided on a stale copy (already Recreated on the server, that
    // claim deleted by its owner since) fails with Conflict instead of bringing the claim back.
    await this.writeStatus(r, {});
    try {
      const created = await this.d.client.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimFromTemplate(c.template, r.spec.pod.namespace, c.name));
      failpoint('rollback-claim-recreated');
      countRecreated();
      this.d.events.event(created, 'Normal', Reasons.ClaimRecreated, `re-created by provisioning rollback ${r.metadata?.name} for pod ${r.spec.pod.name}; Pending until the pod is scheduled again`);
      return { uid: created.metadata?.uid };
    } catch (err) {
      if (isAlreadyExists(err)) return 'exists';
      if (isNamespaceGone(err, r.spec.pod.namespace)) return 'namespaceGone';
      // Refused (a quota filled since the delete, a policy or webhook added since the dry run
      // before it): counted as an error (the alert's metric), said on the pod, the one object of
      // the story its owner still sees, and tried again after RECREATE_RETRY_MS.
      if (!isRefusal(err)) throw err;
      const said = this.said(podRef(r), Reasons.ClaimRecreateFailed, `provisioning rollback ${r.metadata?.name} could not create claim ${c.name} again; retrying: ${errorMessage(err)}`);
      this.d.log[said ? 'warn' : 'debug']('re-creating a claim was refused; trying again', { rollback: r.metadata?.name, namespace: r.spec.pod.namespace, claim: c.name, error: errorMessage(err) });
      countRollback('error');
      return 'refused';
    }
  }

  /**
   * A claim of the name was there when the rollback came to re-create it, and is taken as the
   * re-created one: created by an earlier attempt (before a restart, or a record write that failed),
   * or by its owner (a StatefulSet re-creates its claims from its template). Said on the claim.
   */
  reportAdopted(r: ProvisioningRollback, name: string, uid: string): void {
    const claim: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: r.spec.pod.namespace, uid } };
    this.d.events.event(claim, 'Normal', Reasons.ClaimAdopted, `a claim of this name already existed: taken as the one re-created by provisioning rollback ${r.metadata?.name} for pod ${r.spec.pod.name} (an earlier attempt's create, before a restart or a failed record write, or its owner's)`);
  }

  /**
   * The record finished. `partial` (some claims re-created, some kept): the Completed Event is a
   * Warning, logged, since the kept claims' volumes may still hold the pod where it could not run.
   */
  async finish(r: ProvisioningRollback, phase: RollbackPhase, why?: string, partial = false): Promise<void> {
    const message = why ?? (phase === 'Completed' ? 'claims re-created; the pod can be scheduled on another node' : 'stopped before any claim was deleted');
    const condition = { type: 'Complete', status: 'True' as const, reason: phase, message };
    await this.writeStatus(r, { phase, message, completionTime: nowRfc3339(), conditions: withCondition(r, condition) });
    if (phase !== 'Completed') return;
    this.d.events.event(podRef(r), partial ? 'Warning' : 'Normal', Reasons.RollbackCompleted, `provisioning rollback ${r.metadata?.name}: ${message}`);
    if (partial) this.d.log.warn('provisioning rollback completed in part: claims kept after others were re-created', { rollback: r.metadata?.name, pod: `${r.spec.pod.namespace}/${r.spec.pod.name}`, why: message });
  }

  /** One claim's state in the record, written with the record's resourceVersion (a stale writer fails). */
  async setClaim(r: ProvisioningRollback, name: string, state: ClaimState, uid?: string, message?: string): Promise<ProvisioningRollback> {
    const claims = [...(r.status?.claims ?? []).filter((c) => c.name !== name), { name, state, uid, message }];
    const phase: RollbackPhase = claims.some((c) => c.state === 'Deleted' || c.state === 'Recreated' || c.state === 'Abandoned') ? 'Recreating' : 'Deleting';
    const written = await this.writeStatus(r, { phase, claims });
    // Between "about to delete" recorded and the delete sent.
    if (state === 'Deleting') failpoint('rollback-claim-deleting');
    return written;
  }

  /** The record's status with `changes`, written with its resourceVersion (a stale writer fails). */
  private writeStatus(r: ProvisioningRollback, changes: Partial<ProvisioningRollbackStatus>): Promise<ProvisioningRollback> {
    return this.d.client.replaceStatus(ProvisioningRollbacks, { ...r, status: { ...r.status, ...changes } });
  }

}

/** The record's conditions with `c` set (replacing one of its type), stamped now. */
function withCondition(r: ProvisioningRollback, c: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>): Condition[] {
  const others = (r.status?.conditions ?? []).filter((x) => x.type !== c.type);
  return [...others, { ...c, lastTransitionTime: nowRfc3339(), observedGeneration: r.metadata?.generation }];
}

const podKey = (p: Pod): string => `${p.metadata?.namespace}/${p.metadata?.name}`;
/** A dry run's decision, by its reasons: the node's own state is dated now at each look, so not by the evidence's time. */
const dryRunKey = (p: Pod, r: Extract<RollbackDecision, { kind: 'rollback' }>): string => `${p.metadata?.uid}/${r.why}`;

/** The pod a record is about, as an Event target. */
/** The record's pod, as an Event's object. */
export const podRef = (r: ProvisioningRollback): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: r.spec.pod.name, namespace: r.spec.pod.namespace, uid: r.spec.pod.uid } });
