import { classifyError, errorMessage, getIfPresent, isFenced, isRefusal, logger, Resources, splitKey, writeMayHaveApplied } from '@topovol/shared';
import type { Event, FirstSeen, KubeClient, Logger, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import type { BinderActuator } from './actuator.js';
import { isNewer } from './assume-cache.js';
import type { AssumeCache } from './assume-cache.js';
import type { BinderWorld } from './binder-world.js';
import { countBind, countRefuted, observeBind } from './binder-metrics.js';
import { Reasons } from './binder-reasons.js';
import { countRetroactiveClass, deleteStarted, OperationTimestamps, provisioningStarted } from './operation-metrics.js';
import { claimClass } from './claim-helpers.js';
import { decideClaim } from './decide-claim.js';
import { decideVolume } from './decide-volume.js';
import { orphanedBind, takenFromFreePool } from './orphaned-bind.js';
import { issueSeen } from './selected-node-checks.js';
import type { SelectedNodeIssueSeen } from './selected-node-checks.js';
import type { ProvisioningActivity } from './provisioning-activity.js';
import type { VolumeNamePattern } from './provisioned-volume-names.js';
import { StaleViewError, verifyOnServer, volumeOnServer } from './verify-on-server.js';
import { retryUnsettledVolume } from './unsettled-retry.js';

export interface BinderGlueDeps {
  world: BinderWorld;
  client: KubeClient;
  actuator: BinderActuator;
  volumes: AssumeCache<PersistentVolume>;
  claims: AssumeCache<PersistentVolumeClaim>;
  /** Volumes a worker has decided to bind and is writing now (the world's free volumes skip them). */
  inFlight: Set<string>;
  /** Queues these claims (namespace/name) again: see BinderReconciler.passedOver. */
  requeueClaims: (keys: string[]) => void;
  /** Selected-node problems noted by the decisions, by claim uid (the world reads them back). */
  selectedNodeIssues: FirstSeen<SelectedNodeIssueSeen>;
  /**
   * When the provisioner's Events last showed activity, read against the server's
   * (verify-on-server.ts); without it, by their own timestamps only.
   */
  provisioningActivity?: ProvisioningActivity;
  /** How provisioners name a claim's volume (--provisioned-volume-names); by default `pvc-<uid>`. */
  volumeNames?: readonly VolumeNamePattern[];
  dryRun: boolean;
  /** The clock of UNSETTLED_HOLD_MS (ms); Date.now by default. */
  now?: () => number;
}

/**
 * How long a claim whose volume write got no answer, and whose read-back of that volume the API
 * server refuses (403, 400, 422: refused again at every retry), waits for the informer to show the
 * volume anew before it is decided on the informer's view all the same. Decided sooner, it could
 * pass the volume by while another worker holds it and take a second one, leaving the first bound
 * to a claim bound elsewhere (see unsettled); held for ever, a claim whose write never landed would
 * never bind. Past it the claim retries that volume's write (retryUnsettledVolume): it lands if the
 * first did not, and fails its precondition if it did. A watch here delivers a write within seconds.
 */
export const UNSETTLED_HOLD_MS = 60_000;

/** How soon a volume whose phase or claimRef write waits for a claim's run (inFlight) is looked at again. */
const IN_FLIGHT_RECHECK_MS = 500;

/** How often a claim held so looks again (the informer's copy moving ends the hold at its next look). */
const UNSETTLED_RECHECK_MS = 2_000;

/** A claim's volume writes that may have landed unanswered: the volumes, the version each write was made against, since when. */
interface Unsettled {
  /** The claim the writes were for: a claim made again under its name is not it. */
  claimUid: string | undefined;
  volumes: { name: string; resourceVersion: string | undefined }[];
  since: number;
  /** The hold was said on the claim (once: its looks every few seconds would spend the recorder's burst for the claim). */
  said?: boolean;
  /** Past UNSETTLED_HOLD_MS: decided on the cache, retrying a volume the cache still shows as written (retryUnsettledVolume). */
  expired?: boolean;
}

/**
 * The pv-binder loop's glue, one method per kind of key: the decision (pure, over the world), what
 * it asks to remember, the volumes it reserves, the server's confirmation of what no precondition
 * guards, the actuator's writes, the assume cache undone on a conflict, and the metrics.
 */
export class BinderReconciler {
  /**
   * Unbound claims last decided with no volume to take while some volume was reserved: they may
   * have passed a reserved one by. When a reservation's writes fail, its volume is still free and
   * no event says so (nothing on it changed), so these are queued again; not the claim whose
   * writes failed (its own retry backs off), nor every waiting claim of the class (two claims
   * failing on one volume would wake each other without end).
   */
  private readonly passedOver = new Set<string>();

  /**
   * Claims whose volume writes may have reached the server though no answer came (writeMayHaveApplied),
   * with the volumes they picked. Their next run reads those volumes from the server before deciding,
   * so that one the write did take (its claimRef now naming the claim) is found pre-bound to it.
   * Upstream's single claim worker retries the same volume until its informer shows the write; with
   * several workers, another may hold that volume at the moment of the retry, which would then pass it
   * by and take a second one, leaving the first bound to a claim bound elsewhere (released, and with
   * Delete deleted, if it was provisioned).
   */
  private readonly unsettled = new Map<string, Unsettled>();

  /** Provisioning and deletion under way, for kube-controller-manager's operation metrics (operation-metrics.ts). */
  private readonly operations = new OperationTimestamps();

  constructor(private readonly d: BinderGlueDeps) {}

  /** The claim was deleted: nothing is kept of it (a claim deleted is never decided again to clear it). */
  forgetClaim(key: string): void {
    this.passedOver.delete(key);
    this.operations.forget(key);
    this.unsettled.delete(key);
  }

  /** The volume is gone: a deletion handed to its deleter ends (its latency is recorded). */
  volumeGone(name: string): void {
    this.operations.record(name, false);
  }

  async claim(namespace: string, name: string): Promise<number | void> {
    const { world, inFlight } = this.d;
    const key = `${namespace}/${name}`;
    this.passedOver.delete(key);
    const hold = await this.settle(key);
    if (hold !== undefined) return hold;
    const claim = world.claim(namespace, name);
    if (!claim) return;
    const wasBound = claim.status?.phase === 'Bound';
    const pending = this.unsettledFree(key);
    // Another worker's write of it under way: looked at again once that is answered.
    if (pending && inFlight.has(pending.metadata?.name ?? '')) return UNSETTLED_RECHECK_MS;
    const actions = retryUnsettledVolume(decideClaim(claim, world), claim, pending);
    this.remember(actions);
    // Reserved from the decision (no await in between) until the write is done, so that other
    // workers pick the next volume instead of racing for this one into a Conflict.
    const picked = actions.flatMap((a) => (a.kind === 'bindVolume' ? [a.volume.metadata!.name!] : []));
    if (picked.length === 0 && inFlight.size > 0 && !claim.spec?.volumeName) this.passedOver.add(key);
    for (const n of picked) inFlight.add(n);
    // Which picked volumes this run writes (their view moves on): a later write of the run that
    // fails leaves those as the server answered them.
    const viewed = new Map(picked.map((n) => [n, world.volume(n)?.metadata?.resourceVersion]));
    // Volumes this run takes from the free pool (no claimRef yet): see takeBackOrphaned.
    const wasFree = takenFromFreePool(actions, claim, world);
    // Upstream's provision timestamp starts when a claim is first handed to its provisioner.
    const provisioner = this.d.dryRun ? undefined : provisioningStarted(actions, claim, world.storageClass(claimClass(claim)));
    if (provisioner !== undefined) this.operations.addIfNotExist(key, provisioner, 'provision');
    const classWrite = actions.some((a) => a.kind === 'setClaimClass') && !this.d.dryRun;
    // Upstream times a provisioning up to the binding of a volume found for a claim that names none.
    const matched = picked.length > 0 && !claim.spec?.volumeName && !this.d.dryRun;
    let failed = false;
    try {
      await this.run(actions);
    } catch (err) {
      failed = true;
      const stale = err instanceof StaleViewError || classifyError(err).kind === 'Conflict';
      // A write the leader-election fence held was not sent: neither a race nor a failure.
      if (picked.length > 0 && !isFenced(err)) countBind(stale ? 'conflict' : 'error');
      // As upstream's RecordMetric after a failed bind of a matched volume or a failed hand-over: an
      // error of the claim's provisioning, if one is timed (not a write the fence held, nor a plan
      // the server's objects refuted, which upstream has no read for).
      if ((matched || provisioner !== undefined) && !isFenced(err) && !(err instanceof StaleViewError)) this.operations.record(key, true);
      // The hand-over's one write (the provisioner annotation) failed: upstream's
      // provisionClaimOperationExternal says so on the claim before it tries again.
      if (provisioner !== undefined && !isFenced(err) && !(err instanceof StaleViewError)) {
        await this.d.actuator.run([event(claim, 'Warning', Reasons.ProvisioningFailed, `Error saving claim: ${errorMessage(err)}`)]);
      }
      // A binding write the API server refused (a policy or webhook on claims or volumes, the role
      // narrowed) is refused again at every retry: upstream only logs it (`bind` in
      // pv_controller.go); said on the claim, where `kubectl describe` shows why it stays Pending.
      if (picked.length > 0 && isRefusal(err)) {
        await this.d.actuator.run([event(claim, 'Warning', Reasons.FailedBinding, `binding to volume ${picked.join(', ')} was refused by the API server; retrying: ${errorMessage(err)}`)]);
      }
      // Any other refused write of the claim's sync (a status, an annotation; not the hand-over,
      // said above): the same, as UpdateRefused.
      if (picked.length === 0 && provisioner === undefined && isRefusal(err)) await this.refused(claim, err);
      if (classWrite && !isFenced(err)) countRetroactiveClass(false);
      if (wasFree.length > 0 && !isFenced(err) && !this.d.dryRun) await this.takeBackOrphaned(claim, wasFree, viewed);
      if (picked.length > 0 && !stale && writeMayHaveApplied(err)) {
        this.unsettled.set(key, { claimUid: claim.metadata?.uid, volumes: picked.map((n) => ({ name: n, resourceVersion: viewed.get(n) })), since: this.now() });
      }
      // Our view was stale: drop what we assumed so the retry reads the informer's truth; but not a
      // volume this run wrote (a claim write that conflicts after it), nor one the view already
      // holds for this claim (an earlier run wrote it, and this one had nothing to write): that is
      // the server's answer, and forgetting it would hide from the retry the volume it already
      // holds, which it would pass by as taken and take another (the first left bound to a claim
      // bound elsewhere; upstream keeps its own writes where its search reads).
      if (stale) {
        this.d.claims.forget(key);
        const uid = claim.metadata?.uid;
        for (const n of picked) {
          const v = world.volume(n);
          if (v?.metadata?.resourceVersion === viewed.get(n) && !(uid && v?.spec?.claimRef?.uid === uid)) this.d.volumes.forget(n);
        }
      }
      throw err;
    } finally {
      for (const n of picked) inFlight.delete(n);
      if (failed && picked.length > 0 && this.passedOver.size > 0) {
        const keys = [...this.passedOver];
        this.passedOver.clear();
        this.d.requeueClaims(keys);
      }
    }
    if (classWrite) countRetroactiveClass(true);
    // Bound: the end of its provisioning, if one was timed (upstream's RecordMetric after bind).
    if (matched) this.operations.record(key, false);
    if (actions.some((a) => a.kind === 'bindClaim') && !wasBound && !this.d.dryRun) {
      countBind('bound');
      const since = Date.parse(claim.metadata?.creationTimestamp ?? '');
      const mode = world.storageClass(claimClass(claim))?.volumeBindingMode ?? 'Immediate';
      if (!Number.isNaN(since)) observeBind(mode, Math.max(0, (Date.now() - since) / 1000));
    }
    const waits = actions.flatMap((a) => (a.kind === 'requeueAfter' ? [a.ms] : []));
    if (waits.length > 0) return Math.min(...waits);
  }

  /** `ctx.log` read only to log: the context makes its child logger when first read (ReconcileContext). */
  async volume(name: string, ctx: { readonly log: Logger }): Promise<number | void> {
    const volume = this.d.world.volume(name);
    if (!volume) return;
    const actions = decideVolume(volume, this.d.world);
    if (logger().isDebugEnabled()) ctx.log.debug('volume synced', { actions: actions.map((a) => a.kind) });
    // A claim's run is writing this volume (a binding, perhaps taken back: takeBackOrphaned): it is
    // not Released under that run, which may be about to make it Available again.
    // Nor is any other phase or claimRef written under it: a claim naming the volume re-binds it
    // phase first (Bound, no claimRef yet), which this sync would otherwise make Available.
    if (this.d.inFlight.has(name) && actions.some((a) => a.kind === 'volumePhase' || a.kind === 'unbindVolume')) return IN_FLIGHT_RECHECK_MS;
    try {
      await this.run(actions);
      tookBack(actions);
    } catch (err) {
      // A refused phase write leaves a volume un-Released, so its deleter never runs: said on it.
      if (isRefusal(err)) await this.refused(volume, err);
      throw err;
    }
    // Upstream's reclaimVolume with Delete starts the deletion's timestamp, once the release is
    // confirmed and written; it ends when the volume is gone (volumeGone). An external deleter's
    // work has no error upstream counts.
    const deleter = this.d.dryRun ? undefined : deleteStarted(volume, this.d.world);
    if (deleter !== undefined) this.operations.addIfNotExist(name, deleter, 'delete');
  }

  /**
   * A request of `obj`'s sync the API server refused (a write refused by a policy or webhook, a
   * write or a read refused to a narrowed role): refused again at every retry, and upstream only logs it (pv_controller.go returns the error to its
   * sync); said on the object, where `kubectl describe` shows why it does not move on.
   */
  private async refused(obj: PersistentVolume | PersistentVolumeClaim, err: unknown): Promise<void> {
    await this.d.actuator.run([event(obj, 'Warning', Reasons.UpdateRefused, `a request of its sync was refused by the API server; retrying: ${errorMessage(err)}`)]);
  }

  /**
   * The server's copies of the volumes a claim's unanswered writes were for (unsettled), over the
   * informer's until it catches up (volumeOnServer). A read-back the server refuses leaves the claim
   * waiting (the ms returned) while the informer still shows that volume as it was when written,
   * for at most UNSETTLED_HOLD_MS; then it is decided on the informer's view, retrying that volume
   * while the informer shows it as written (retryUnsettledVolume), never taking another.
   */
  private async settle(key: string): Promise<number | undefined> {
    const u = this.unsettled.get(key);
    if (!u) return undefined;
    // Past the hold: no read again; kept while the cache shows a volume as written.
    if (u.expired) {
      if (this.unsettledFree(key) === undefined) this.unsettled.delete(key);
      return undefined;
    }
    for (const { name, resourceVersion } of u.volumes) {
      let live: PersistentVolume | undefined;
      try {
        live = await volumeOnServer(this.d.client, name);
      } catch (err) {
        // Tried again with the claim's backoff; one that cannot succeed (403, 400, 422) must not hold
        // the claim for ever.
        if (!isRefusal(err)) throw err;
        const left = u.since + UNSETTLED_HOLD_MS - this.now();
        const moved = this.d.world.volume(name)?.metadata?.resourceVersion !== resourceVersion;
        if (!moved && left > 0) {
          if (!u.said) {
            u.said = true;
            logger().warn('could not read back a volume whose write got no answer; the claim waits for the informer to show it', { claim: key, volume: name, waitMs: left, error: classifyError(err).message });
            const { namespace, name: claimName } = splitKey(key);
            const claim = this.d.world.claim(namespace ?? '', claimName);
            if (claim) await this.refused(claim, err);
          }
          return Math.min(left, UNSETTLED_RECHECK_MS);
        }
        logger().warn('could not read back a volume whose write got no answer; deciding the claim on the cache, retrying that volume while the cache shows it as written', { claim: key, volume: name, error: classifyError(err).message });
        if (!moved) u.expired = true;
        continue;
      }
      // Only a newer copy: a write of another worker answered meanwhile must not be undone.
      if (live && isNewer(live, this.d.world.volume(name))) this.d.volumes.assume(name, live);
    }
    if (!u.expired) this.unsettled.delete(key);
    return undefined;
  }

  /** Past the hold: a volume of the claim's unanswered writes that the cache shows free and as written (retryUnsettledVolume). */
  private unsettledFree(key: string): PersistentVolume | undefined {
    const u = this.unsettled.get(key);
    if (!u?.expired) return undefined;
    // Only for the claim the writes were for, while it names no volume (set after a forgetClaim
    // that raced the write, an entry could outlive its claim).
    const { namespace, name } = splitKey(key);
    const claim = this.d.world.claim(namespace ?? '', name);
    if (!claim || claim.metadata?.uid !== u.claimUid || claim.spec?.volumeName) {
      this.unsettled.delete(key);
      return undefined;
    }
    for (const { name, resourceVersion } of u.volumes) {
      const v = this.d.world.volume(name);
      if (v && !v.spec?.claimRef && v.metadata?.resourceVersion === resourceVersion) return v;
    }
    return undefined;
  }

  /**
   * After a failed binding: each volume this run took from the free pool and wrote a claimRef on
   * (the assume cache holds the server's answer, naming the claim) is read against the claim on the
   * server, and taken back (Available, no claimRef) when the claim is gone, was created again, is
   * bound to another volume, or is being deleted with no placed pod (orphaned-bind.ts). The undo
   * carries the resourceVersion the binding's answer had: a volume someone wrote since is left to
   * its own sync. A read or undo that fails leaves the volume as upstream leaves it.
   */
  private async takeBackOrphaned(claim: PersistentVolumeClaim, wasFree: readonly string[], viewed: ReadonlyMap<string, string | undefined>): Promise<void> {
    const uid = claim.metadata?.uid;
    const written = wasFree.flatMap((n) => {
      const v = this.d.world.volume(n);
      return v && v.metadata?.resourceVersion !== viewed.get(n) && v.spec?.claimRef?.uid === uid ? [v] : [];
    });
    if (written.length === 0) return;
    const key = `${claim.metadata?.namespace}/${claim.metadata?.name}`;
    try {
      const live = await getIfPresent<PersistentVolumeClaim>(this.d.client, Resources.persistentVolumeClaims, claim.metadata!.name!, claim.metadata?.namespace);
      for (const v of written) {
        const why = orphanedBind(v, live, this.d.world);
        if (!why) continue;
        const undo: BinderAction = { kind: 'unbindVolume', volume: v, keepClaimRef: false, takeBack: why };
        await this.d.actuator.run([undo]);
        tookBack([undo]);
      }
    } catch (err) {
      logger().warn('could not take back a volume bound for a claim whose write failed; its sync decides it', { claim: key, error: classifyError(err).message });
    }
  }

  private now(): number {
    return (this.d.now ?? Date.now)();
  }

  /** What the decisions ask to remember (not a write: the actuator never sees it). */
  private remember(actions: BinderAction[]): void {
    for (const a of actions) {
      if (a.kind !== 'noteSelectedNodeIssue') continue;
      const uid = a.claim.metadata?.uid ?? '';
      if (a.issue) this.d.selectedNodeIssues.note(uid, issueSeen(a.issue, a.node), a.at);
      else this.d.selectedNodeIssues.forget(uid);
    }
  }

  /**
   * The plan, once the server has confirmed what it rests on (dry-run writes nothing, so reads
   * nothing). Refuted: the actions before the refuted one are still written, as planned, and the
   * reconcile fails so that it is retried on fresh data.
   */
  private async run(actions: BinderAction[]): Promise<void> {
    const activity = this.d.provisioningActivity;
    const timeOf = activity && ((e: Event) => activity.timeOf(e, Date.now()));
    const refuted = this.d.dryRun ? undefined : await verifyOnServer(this.d.client, actions, { timeOf, volumeNames: this.d.volumeNames });
    await this.d.actuator.run(refuted ? actions.slice(0, refuted.index) : actions);
    if (refuted) {
      countRefuted(refuted.check);
      throw new StaleViewError(refuted.why);
    }
  }
}

/** Counts and logs the take-backs (orphaned-bind.ts) among actions just written. */
function tookBack(actions: readonly BinderAction[]): void {
  for (const a of actions) {
    if (a.kind !== 'unbindVolume' || !a.takeBack) continue;
    countBind('taken_back');
    const ref = a.volume.spec?.claimRef;
    logger().info('took back a volume bound for a claim the server no longer waits with', { claim: `${ref?.namespace}/${ref?.name}`, volume: a.volume.metadata?.name, why: a.takeBack });
  }
}
