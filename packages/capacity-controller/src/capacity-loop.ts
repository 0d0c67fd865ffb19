import { aborted, DONE, doublingBackoffMs, errorMessage, requeueAfter, runnableFunc } from '@topovol/shared';
import type { CSINode, CSIStorageCapacity, Logger, Node, ReconcileContext, Result, Runnable } from '@topovol/shared';
import { CsiError, GrpcStatus, isUnimplemented } from '@topovol/shared/csi';
import { loopProblems } from './aggregate/loop-problems.js';
import { itemRefresh, STATUS, SYNC } from './capacity-key.js';
import type { CapacityKey } from './capacity-key.js';
import type { CapacityEvents, CapacityInformers, CapacityLoopClient, CapacityQueue, CapacityStatusPublisher } from './capacity-loop-deps.js';
import { capacityMetrics } from './capacity-metrics.js';
import { warnOnDriver } from './driver-warning.js';
import { registerCapacityTriggers } from './capacity-triggers.js';
import type { CapacityItem } from './objects/capacity-item.js';
import { EPHEMERAL_CLASS, itemKey } from './objects/capacity-item.js';
import { classGone, currentObjects, objectKeys, obsoleteObjects } from './objects/current-objects.js';
import type { ObjectsView } from './objects/current-objects.js';
import type { MeasuredCapacity, ObjectIdentity } from './objects/capacity-object.js';
import { itemKeyOfObject } from './objects/capacity-object.js';
import type { DesiredItem, DesiredOptions, DesiredState } from './objects/desired-items.js';
import { desiredItems } from './objects/desired-items.js';
import { ITEM_TARGET, ObjectActuator } from './objects/object-actuator.js';
import { writeDenialReports } from './objects/write-denial-reports.js';
import { planItem } from './objects/plan-capacity-objects.js';
import { callNeededSince, refreshDecision, takeFailureRefresh } from './objects/refresh-timing.js';
import type { ItemState } from './objects/refresh-timing.js';
import { figureFor, LoopStatus } from './loop-status.js';
import { OwnNodeReport } from './own-node-report.js';
import { ClassFailureReports } from './source/class-failure-reports.js';
import { ProblemReporter } from './problem-reporter.js';
import { placeNodes, segmentLabelKeys } from './segments/compute-segments.js';
import type { PlacedNode } from './segments/compute-segments.js';
import { csiNodeLookup, KeptRegistration } from './segments/kept-registration.js';
import { selfExcludedNodes, unsegmentedNodes } from './segments/unsegmented-nodes.js';
import { uniqueSegments } from './segments/segment.js';
import type { SegmentMode } from './segments/segment-mode.js';
import { CallSlots } from './source/call-slots.js';
import type { CapacityMeter } from './source/get-capacity.js';
import { requestKey, RunningRequests } from './source/running-requests.js';
import { UnimplementedVerdicts } from './source/unimplemented-verdict.js';
import type { UnimplementedVerdict } from './source/unimplemented-verdict.js';

/** First wait after a failed GetCapacity (beyond the call's own retries); doubles per failure. */
export const FAILURE_BACKOFF_MS = 1_000;

export interface CapacityLoopOptions extends DesiredOptions {
  mode: SegmentMode;
  /**
   * Per-node mode (--capacity-node-name): only this node's segment is tracked, as external-provisioner's
   * --node-deployment --enable-capacity does, since a per-node driver can only answer for its own
   * node; and the aggregated status is left to the per-node writer.
   */
  onlyNode?: string;
  identity: ObjectIdentity;
  pollIntervalMs: number;
  minRefreshMs: number;
  statusRefreshMs: number;
  /** The driver's objects other publishers manage, for the SolePublisher condition (other-publishers.ts). */
  otherPublisherObjects?: () => readonly CSIStorageCapacity[];
  /** After Unimplemented, ask again this long later, doubling while it lasts (up to an hour). */
  unimplementedRetryMs?: number;
  /** GetCapacity calls at once (default 4); they never hold a worker. */
  callSlots?: number;
  /** --dry-run: decide and log, write nothing (no objects, no status). */
  dryRun?: boolean;
  now?: () => number;
  /** A time of `now`'s clock on the status writer's (the API server's); default: the same clock. */
  toStatusTime?: (ms: number) => number;
}

/**
 * The central capacity loop. Keys (capacity-key.ts): `sync` recomputes segments × classes and
 * deletes obsolete objects; an item key refreshes one (class, segment[, pool]) through GetCapacity
 * and makes its CSIStorageCapacity object say so; `status` publishes the aggregated status. It is
 * handed its queue, as external-provisioner's capacity controller is. Volume events only
 * mark items dirty: the work queue merges repeated keys, and refreshDecision (objects/refresh-timing.ts)
 * asks the driver at once for the first change and at most once per --capacity-min-refresh-interval
 * while changes keep coming, so a burst costs a few calls per item and a lone change waits for none.
 */
export class CapacityLoop {
  private desired: DesiredState = { items: new Map(), frozen: new Map(), created: new Map(), problems: [], exclusions: new Map() };
  private readonly state = new Map<string, ItemState>();
  /** Item keys by GetCapacity request (requestKey): items of one request share its calls. */
  private byRequest = new Map<string, string[]>();
  private readonly running = new RunningRequests();
  private readonly objects: ObjectActuator;
  private readonly problems: ProblemReporter;
  /** The driver answered Unimplemented, per set of class parameters: when to ask again (unimplemented-verdict.ts). */
  private readonly unsupported: UnimplementedVerdicts;
  private readonly now: () => number;
  private readonly calls: CallSlots;
  /** Cancels the GetCapacity calls still running when the loop stops (they outlive their reconcile). */
  private readonly stopping = new AbortController();
  /** Per node: the driver's registration kept while kubelet has it unregistered (kept-registration.ts). */
  private readonly kept: KeptRegistration | undefined;
  /** Per node: whether --capacity-node-name names a Node, said when that changes. */
  private readonly ownNode: OwnNodeReport | undefined;
  /** The `status` key: object counts and the aggregated status (loop-status.ts). */
  private readonly loopStatus: LoopStatus;
  /** GetCapacity failures a retry will not mend, said once per class. */
  private readonly classFailures: ClassFailureReports;

  constructor(
    private readonly inf: CapacityInformers,
    private readonly source: CapacityMeter,
    private readonly writeClient: CapacityLoopClient,
    status: CapacityStatusPublisher,
    private readonly events: CapacityEvents,
    private readonly queue: CapacityQueue,
    private readonly opts: CapacityLoopOptions,
    private readonly log: Logger,
  ) {
    this.now = opts.now ?? Date.now;
    this.calls = new CallSlots(opts.callSlots ?? 4);
    this.unsupported = new UnimplementedVerdicts(opts.unimplementedRetryMs ?? 10 * 60_000, this.now);
    this.problems = new ProblemReporter(events, log);
    this.objects = new ObjectActuator(writeClient, opts.identity.namespace, { replan: () => this.queue.add(SYNC), retryItem: (key) => this.queue.add(itemRefresh(key)), ...writeDenialReports({ client: writeClient, events, log, driverName: opts.driverName, statusChanged: () => this.queue.add(STATUS) }) }, opts.dryRun, this.now);
    inf.objects.addIndex('item', itemKeyOfObject);
    // Only where a node counts once the driver is registered (not with anyNode, which never looks).
    const registers = opts.mode.kind === 'csinode' || !opts.mode.anyNode;
    this.kept = opts.onlyNode && registers ? new KeptRegistration(opts.driverName, opts.onlyNode, log) : undefined;
    this.ownNode = opts.onlyNode ? new OwnNodeReport({ client: writeClient, events, log, driverName: opts.driverName, nodeName: opts.onlyNode }) : undefined;
    this.loopStatus = new LoopStatus({
      inf,
      status,
      client: writeClient,
      events,
      log,
      driverName: opts.driverName,
      statusRefreshMs: opts.statusRefreshMs,
      writes: !opts.dryRun && !opts.onlyNode,
      toStatusTime: opts.toStatusTime,
      otherPublisherObjects: opts.otherPublisherObjects,
      desired: () => this.desired,
      state: (key) => this.state.get(key),
      view: () => this.view(),
      unsupported: this.unsupported,
      refusal: () => this.objects.refusal,
    });
    const onNode = opts.onlyNode;
    this.classFailures = new ClassFailureReports({ events, log, driverName: opts.driverName, target: (cls) => (onNode ? inf.nodes.cache.get(onNode) : inf.classes.cache.get(cls)) });
  }

  /** The informer handlers: which changes lead to which keys (capacity-triggers.ts). */
  register(): void {
    registerCapacityTriggers({
      inf: this.inf,
      driverName: this.opts.driverName,
      onlyNode: this.opts.onlyNode,
      log: this.log,
      items: () => this.desired.items,
      sync: () => this.queue.add(SYNC),
      refresh: (key) => this.queue.add(itemRefresh(key)),
      refreshDirty: (key) => {
        this.markDirty(key);
        this.queue.add(itemRefresh(key));
      },
      mayRefreshAfterFailure: (key) => {
        const st = this.state.get(key);
        return !st || takeFailureRefresh(st, this.now, this.opts.pollIntervalMs);
      },
      objectSeen: (key, name) => this.objects.seen(key, name),
    });
  }

  reconcile = async (ctx: ReconcileContext, key: CapacityKey): Promise<Result> => {
    switch (key.kind) {
      case 'sync':
        return requeueAfter(await this.sync(ctx));
      case 'status':
        return requeueAfter(await this.loopStatus.publish());
      case 'item':
        return this.refreshItem(ctx, key.item);
    }
  };

  private async sync(ctx: ReconcileContext): Promise<number> {
    const only = this.opts.onlyNode;
    const nodes = only ? [this.inf.nodes.cache.get(only)].filter((n): n is Node => n !== undefined) : this.inf.nodes.cache.list();
    // A node being deleted is left out of the segments too (placeNodes): nothing is published for it.
    this.ownNode?.note(nodes.some((n) => !n.metadata?.deletionTimestamp));
    const csiNodeOf = csiNodeLookup(this.kept, this.inf.csiNodes.cache);
    const placed = placeNodes(this.opts.mode, nodes, csiNodeOf, this.opts.driverName);
    const segments = uniqueSegments(placed.map((p) => p.segment));
    // domains mode only: there a segment's own nodes never carry the next domain key, so leaving
    // out of its exclusions what they do carry still tells the deeper nodes apart (deeperKeys).
    const labelKeys = this.opts.mode.kind === 'domains' ? segmentLabelKeys(placed) : undefined;
    const before = this.desired;
    // Every node's labels (nodes being deleted aside, as placeNodes leaves them out): a pool's domain
    // selector must reach no node the pool's own segments leave out (desiredItems), whether in no
    // segment (the driver not registered there) or in a segment its labels go beyond (a middle
    // domain label missing, a topology key its CSINode no longer lists).
    const placedIn = new Map(placed.map((p) => [p.node.metadata?.name, p.segment]));
    const domainNodes = nodes.filter((n) => !n.metadata?.deletionTimestamp).map((n) => ({ labels: n.metadata?.labels ?? {}, segment: placedIn.get(n.metadata?.name) }));
    this.desired = desiredItems(this.inf.classes.cache.list(), segments, this.opts, labelKeys && ((k) => labelKeys.get(k)), domainNodes);
    this.byRequest = new Map();
    this.unsupported.keepOnly([...this.desired.items.values()].map((d) => d.parameters));
    this.classFailures.keepOnly(new Set([...this.desired.items.values()].map((d) => d.item.storageClassName)));
    const now = this.now();
    for (const [key, d] of this.desired.items) {
      const rk = requestKey(d.parameters, d.item.segment);
      const same = this.byRequest.get(rk);
      if (same) same.push(key);
      else this.byRequest.set(rk, [key]);
      // Wanted from now on: items of one sync can share their first call.
      if (!this.state.has(key)) this.state.set(key, { refreshedAt: 0, dirty: true, failures: 0, createdAt: now });
    }
    for (const [key, d] of this.desired.items) {
      const old = before.items.get(key);
      if (old && JSON.stringify(old.parameters) === JSON.stringify(d.parameters)) continue;
      this.markDirty(key);
      this.queue.add(itemRefresh(key));
    }
    for (const key of this.state.keys()) {
      if (this.desired.items.has(key)) continue;
      this.state.delete(key);
      const gone = before.items.get(key);
      if (gone) capacityMetrics.forget(this.opts.driverName, gone.item);
    }
    this.reportProblems(nodes, placed, csiNodeOf);
    // Per node, before the driver has registered here: its objects wait for it (kept-registration.ts).
    // Objects of a class gone or made for an earlier one still go (as upstream's onSCDelete).
    const waiting = this.kept?.waitsForRegistration(placed.length === 0 && nodes.some((n) => !n.metadata?.deletionTimestamp));
    const view = this.view();
    const obsolete = obsoleteObjects(view, objectKeys(view));
    for (const a of obsolete) if (!waiting || classGone(view, a.object)) await this.objects.execute(ctx, a);
    this.objects.settleUnowed(this.desired.items, obsolete.map((a) => a.object));
    this.queue.add(STATUS);
    ctx.log.debug('synced', { segments: segments.length, items: this.desired.items.size });
    return this.opts.pollIntervalMs;
  }

  private async refreshItem(ctx: ReconcileContext, key: string): Promise<Result> {
    const d = this.desired.items.get(key);
    if (!d) return DONE;
    // Unimplemented for these parameters: one call per backoff period, whichever of their items
    // comes first; the rest wait for its end, which queues them (an answer ends the period; another
    // Unimplemented sets the next). Items of other parameters are asked as usual.
    const verdict = this.unsupported.of(d.parameters);
    const wait = verdict?.waitMs() ?? 0;
    if (wait > 0) return requeueAfter(wait);
    if (verdict?.probing) return DONE;
    let st = this.state.get(key);
    if (!st) this.state.set(key, (st = { refreshedAt: 0, dirty: true, failures: 0, createdAt: this.now() }));
    // Its completion enqueues the key again.
    if (st.inflight) return DONE;
    const now = this.now();
    const next = refreshDecision(st, now, this.opts);
    if (next.call) {
      // A call of the same request that started since this item needed one answers for it too;
      // its landing enqueues this item.
      if (this.running.covers(requestKey(d.parameters, d.item.segment), callNeededSince(st, next.cause, this.opts))) return DONE;
      if (next.cause === 'event') st.eventCallAt = now;
      this.measure(ctx, key, d, st, now);
    }
    // Each answer reaches the objects as it lands, as external-provisioner writes every answer at
    // once (pkg/capacity/capacity.go, syncCapacity), even while a change since its call keeps the
    // item dirty: a newer figure than the object's is never worse, and volume events that keep
    // coming must not hold the objects at their old figure. A failed last call publishes nothing.
    const figure = figureFor(d, st);
    if (figure && st.error === undefined && d.item.storageClassName !== EPHEMERAL_CLASS) {
      await this.ensureObjects(ctx, key, d.item, figure);
    }
    return next.call ? DONE : requeueAfter(next.afterMs);
  }

  /**
   * Asks the driver without holding a worker (see CallSlots); the answer lands in the item's state
   * and the item is enqueued again to publish it.
   */
  private measure(ctx: ReconcileContext, key: string, d: DesiredItem, st: ItemState, startedAt: number): void {
    st.dirty = false;
    st.inflight = true;
    const rk = requestKey(d.parameters, d.item.segment);
    const verdict = this.unsupported.for(d.parameters);
    const { probe, asked } = verdict.begin();
    this.running.begin(rk, startedAt);
    this.calls
      .run(() => {
        // Waited for a slot while another call found the driver Unimplemented: not asked (see driverUnsupported).
        if (verdict.decidedSince(asked)) return Promise.reject(new CsiError('GetCapacity', GrpcStatus.UNIMPLEMENTED, verdict.message ?? ''));
        return this.source.get(d.parameters, d.item.segment, AbortSignal.any([ctx.signal, this.stopping.signal]));
      })
      .then(
        (measured) => this.measured(rk, d, st, measured, startedAt),
        (err: unknown) => this.measureFailed(d, st, err, verdict, asked),
      )
      .finally(() => {
        st.inflight = false;
        verdict.end(probe);
        this.running.end(rk, startedAt);
        if (this.stopping.signal.aborted) return;
        const waiting = probe ? this.unsupported.itemsWith(this.desired.items, d.parameters) : [];
        for (const k of new Set([key, ...(this.byRequest.get(rk) ?? []), ...waiting])) this.queue.add(itemRefresh(k));
      });
  }

  /** A volume event or a failed provisioning: the item's figure may be stale. */
  private markDirty(key: string): void {
    const st = this.state.get(key);
    if (!st) return;
    st.dirty = true;
    st.lastEventAt = this.now();
  }

  /**
   * The GetCapacity calls running outside the workers (see measure), as work of their own:
   * stopping it cancels those still running.
   */
  readonly getCapacityCalls: Runnable = runnableFunc('capacity-getcapacity-calls', async (signal) => {
    await aborted(signal);
    this.stopping.abort();
  });

  /** An answer lands: the item that asked and every other item of its request take it. */
  private measured(rk: string, d: DesiredItem, st: ItemState, measured: MeasuredCapacity, startedAt: number): void {
    const after = this.unsupported.clear(d.parameters);
    if (after !== undefined) {
      this.log.info('the CSI driver answers GetCapacity again: tracking its capacity', { driver: this.opts.driverName, storageClass: d.item.storageClassName, after });
      for (const k of this.unsupported.itemsWith(this.desired.items, d.parameters)) this.queue.add(itemRefresh(k));
    }
    // One landing instant for all: their next polls fall due together, so they share that call too.
    const landedAt = this.now();
    // An item dropped (or re-made) while its call ran takes nothing: its metric series is gone.
    if (this.state.get(itemKey(d.item)) === st) this.take(d, st, measured, startedAt, landedAt);
    for (const k of this.byRequest.get(rk) ?? []) {
      const other = this.state.get(k);
      const od = this.desired.items.get(k);
      if (!other || !od || other === st) continue;
      this.take(od, other, measured, startedAt, landedAt);
      // Events up to the call's start are answered by it; a later one still needs a call.
      if ((other.lastEventAt ?? -Infinity) <= startedAt) other.dirty = false;
      // A call made for a change opens the coalescing window of every item it answered.
      if (st.eventCallAt === startedAt) other.eventCallAt = startedAt;
    }
  }

  private take(d: DesiredItem, st: ItemState, measured: MeasuredCapacity, startedAt: number, landedAt: number): void {
    if ((st.answerStartedAt ?? -Infinity) > startedAt) return;
    st.answerStartedAt = startedAt;
    const rk = requestKey(d.parameters, d.item.segment);
    // The same figure for other parameters is news too: the status left the item out meanwhile.
    const changed = st.measured?.available !== measured.available || st.measured?.maximumVolumeSize !== measured.maximumVolumeSize || st.error !== undefined || st.measuredFor !== rk;
    st.measured = measured;
    st.measuredFor = rk;
    st.refreshedAt = landedAt;
    st.error = undefined;
    st.failures = 0;
    st.retryAt = undefined;
    this.classFailures.answered(d.item.storageClassName);
    capacityMetrics.measured(this.opts.driverName, d.item, measured.available);
    if (changed) this.queue.add(STATUS);
  }

  private measureFailed(d: DesiredItem, st: ItemState, err: unknown, verdict: UnimplementedVerdict, asked: number): void {
    st.dirty = true;
    if (this.stopping.signal.aborted) return;
    // No figure to write until the driver answers: what the status says is its failure, not a denial.
    this.objects.settled((t) => t === ITEM_TARGET(itemKey(d.item)));
    if (isUnimplemented(err)) {
      this.driverUnsupported(d, errorMessage(err), verdict, asked);
      return;
    }
    st.error = errorMessage(err);
    st.failures++;
    this.classFailures.failed(d.item.storageClassName, err);
    // Per item, doubling from 1 s up to the poll interval, as a failed reconcile would back off.
    const wait = doublingBackoffMs(FAILURE_BACKOFF_MS, st.failures, this.opts.pollIntervalMs);
    st.retryAt = this.now() + wait;
    this.log.warn('GetCapacity failed', { driver: this.opts.driverName, storageClass: d.item.storageClassName, segment: d.item.segment, pool: d.item.pool || undefined, error: st.error, retryInMs: wait });
    this.queue.add(STATUS);
  }

  private async ensureObjects(ctx: ReconcileContext, key: string, item: CapacityItem, measured: MeasuredCapacity): Promise<void> {
    const objects = currentObjects(this.view(), key, item.storageClassName);
    const pending = this.objects.pending(key);
    if (pending && !objects.some((o) => o.metadata?.name === pending.metadata?.name)) objects.push(pending);
    for (const a of planItem(this.opts.identity, item, measured, objects)) await this.objects.execute(ctx, a, ITEM_TARGET(key));
    this.objects.settled((t) => t === ITEM_TARGET(key));
  }

  /** Unimplemented for d's parameters: the items of those parameters wait (UnimplementedVerdicts); the driver is warned about once while any is held. */
  private driverUnsupported(d: DesiredItem, message: string, verdict: UnimplementedVerdict, asked: number): void {
    const heldBefore = this.unsupported.message !== undefined;
    const recorded = verdict.record(message, asked);
    if (recorded.kind !== 'first') return;
    this.log.error('the CSI driver does not implement GetCapacity for these class parameters: capacity is not tracked for them until it does', { driver: this.opts.driverName, storageClass: d.item.storageClassName, error: message, retryInMs: recorded.retryInMs });
    if (!heldBefore) warnOnDriver(this.writeClient, this.events, this.opts.driverName, 'GetCapacityUnimplemented', `capacity is not tracked: ${message}`);
    this.queue.add(STATUS);
  }

  /** Class problems (on the StorageClass) and nodes whose storage is counted nowhere (on the Node). */
  private reportProblems(nodes: readonly Node[], placed: readonly PlacedNode[], csiNodeOf: (name: string) => CSINode | undefined): void {
    const unsegmented = [...unsegmentedNodes(this.opts.mode, nodes, csiNodeOf, this.opts.driverName), ...selfExcludedNodes(this.opts.mode, placed, this.opts.driverName, this.desired.exclusions)];
    this.problems.report(loopProblems(this.opts.driverName, this.desired.problems, (n) => this.inf.classes.cache.get(n), unsegmented));
  }

  /** The cached objects read against the latest desired state (current-objects.ts). */
  private view(): ObjectsView {
    return { desired: this.desired, objects: this.inf.objects, pending: (key) => this.objects.pending(key) };
  }
}
