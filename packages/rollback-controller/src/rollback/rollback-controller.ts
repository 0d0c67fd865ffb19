import { ANN_SELECTED_NODE, claimClass, claimKeysOfPod, listOrderMark, Controller, errorMessage, oncePerTurn, eventsAbout, extraNumber, involvedObjectUid, objectKey, POD_CLAIM_INDEX, PROVISIONING_FAILED_EVENTS, projectClaim, projectEvent, projectNode, projectPod, requeueAfter, Resources, splitKey, WorkQueue } from '@topovol/shared';
import type { ControllerEnv, Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment } from '@topovol/shared';
import { DeletedClaimWatch } from './deleted-claim-watch.js';
import { deletionRequestedAt, EndedUse, podScheduledAt } from './ended-use.js';
import { RelistPacer } from './relist-pacer.js';
import { isFinished, newestFirst, ProvisioningRollbacks } from './intent/provisioning-rollback.js';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';
import { observeProvisioning } from './provisioning-observation.js';
import { RollbackActuator } from './rollback-actuator.js';
import { attachmentByVolume, podByUid, rollbackByClaim, rollbackByHistory, volumeByClaim, volumeByProvisionedForNode, volumeIfUnused } from './rollback-indexes.js';
import { podKeyOf, recordKey, rollbackKeyString, volumeKey } from './rollback-key.js';
import type { RollbackKey } from './rollback-key.js';
import { BACKOFF_DEFAULT_MS, BACKOFF_FLAG, GRACE_DEFAULT_MS, GRACE_FLAG, HISTORY_TTL_DEFAULT_MS, HISTORY_TTL_FLAG, MARK_WINDOW_DEFAULT_MS, MARK_WINDOW_FLAG, MAX_ROLLBACKS_DEFAULT, MAX_ROLLBACKS_FLAG, NODE_STATE_WAIT_FLAG } from './rollback-flags.js';
import { NODE_STATE_DWELL_MS } from './decide-rollback.js';
import { nodePlacementChanged } from './node-rejects-pod.js';
import { usageOf } from './marks.js';
import { liveReads } from './rollback-server-reads.js';
import type { RollbackWorld } from './rollback-world.js';
import { ProvisioningObservations } from './observations.js';
import { RollbackReconciler } from './reconcile-rollback.js';
import { SelectionVersions } from './selection-versions.js';
import { countEndedUseEvicted } from './rollback-metrics.js';
import { podUseOfClaim, unusedMarkDoubt, volumesInUseMentions } from './usage-evidence.js';

const ROLLBACK = 'rollback';


/**
 * The rollback loop (kubernetes #94217): marks volumes on volume keys, decides for stuck pods on pod
 * keys, and advances recorded rollbacks (ProvisioningRollback objects) on record keys.
 */
export function setupRollback(env: ControllerEnv): Controller<RollbackKey> {
  const { informers, client, events, options, log } = env;
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const pvcs = informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
  const pods = informers.forResource<Pod>(Resources.pods, { transform: projectPod });
  const nodes = informers.forResource<Node>(Resources.nodes, { transform: projectNode });
  // Only for whether a failed claim's class binds on first consumer (stuck-evidence.ts).
  const classes = informers.forResource<StorageClass>(Resources.storageClasses);
  const attachments = informers.forResource<VolumeAttachment>(Resources.volumeAttachments);
  const failures = informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS, transform: projectEvent });
  const records = informers.forResource<ProvisioningRollback>(ProvisioningRollbacks);

  pods.addIndex(POD_CLAIM_INDEX, claimKeysOfPod);
  pods.addIndex('uid', podByUid);
  pvs.addIndex('claim', volumeByClaim);
  pvs.addIndex('forNode', volumeByProvisionedForNode);
  pvs.addIndex('unused', volumeIfUnused);
  attachments.addIndex('pv', attachmentByVolume);
  failures.addIndex('claimUid', involvedObjectUid);
  records.addIndex('history', rollbackByHistory);
  records.addIndex('claim', rollbackByClaim);

  /** At which resourceVersion each claim's current selected node was first seen (SelectionVersions). */
  const selections = new SelectionVersions();
  /** What this process saw of claims being provisioned (ProvisioningObservations). */
  const observed = new ProvisioningObservations((mark) => pvcs.listedSince(mark), listOrderMark);
  // Listed again for forgotten uses at most every 30 s (RelistPacer): a flood must not keep the
  // API server listing every claim back to back.
  const claimsRelist = new RelistPacer(() => pvcs.relist());
  /** By claim key: a pod using the claim was deleted after it was scheduled or ran (see usedEvidence). */
  const endedUse = new EndedUse(
    (key) => pvcs.cache.get(key) !== undefined,
    // A forgotten use may be the only evidence that a volume there holds data: no unused mark in
    // those namespaces is vouched for any longer, and no provisioning is observed there until the
    // claims are listed again (a claim state older than the forgotten use could hide it).
    (namespaces, count) => {
      const dropped = observed.forgetNamespaces(namespaces);
      log.warn('too many deleted pods named claims that are not there: their uses are forgotten, volumes marked unused in these namespaces are no longer vouched for, and claims are listed again', { namespaces: [...namespaces].slice(0, 10), forgotten: count, observations: dropped });
      countEndedUseEvicted(count);
      claimsRelist.request();
      for (const v of pvs.cache.byIndex('unused', 'unused')) if (namespaces.has(v.spec?.claimRef?.namespace ?? '')) enqueueVolume(v);
    },
  );
  // --dry-run: the marks we would have written, laid over the cache so that the decisions reported
  // are the ones a real run would make.
  const dryMarks = new Map<string, { labels: Record<string, string>; annotations: Record<string, string> }>();
  const withDryMarks = (v: PersistentVolume | undefined): PersistentVolume | undefined => {
    const m = v && dryMarks.get(v.metadata?.name ?? '');
    if (!v || !m) return v;
    return { ...v, metadata: { ...v.metadata, labels: { ...v.metadata?.labels, ...m.labels }, annotations: { ...v.metadata?.annotations, ...m.annotations } } };
  };
  const world: RollbackWorld = {
    volume: (name) => withDryMarks(pvs.cache.get(name)),
    claim: (ns, name) => pvcs.cache.get(`${ns}/${name}`),
    node: (name) => nodes.cache.get(name),
    nodes: () => nodes.cache.list(),
    storageClass: (name) => classes.cache.get(name),
    podsUsingClaim: (ns, name) => pods.cache.byIndex(POD_CLAIM_INDEX, `${ns}/${name}`),
    podExists: (uid) => pods.cache.byIndex('uid', uid).length > 0,
    nodesUsingVolume: (v) => nodes.cache.list().flatMap((n) => ((n.status?.volumesInUse ?? []).some((e) => volumesInUseMentions(e, v)) ? [n.metadata?.name ?? ''] : [])),
    attachmentsOf: (name) => attachments.cache.byIndex('pv', name),
    provisioningFailures: (c) => eventsAbout(failures.cache.byIndex('claimUid', c.metadata?.uid ?? ''), c),
    failedSinceSelected: (c, e) => selections.failedSinceSelected(c, e),
    provisioningObserved: (uid) => observed.get(uid),
    endedUse: (ns, name) => endedUse.get(`${ns}/${name}`),
    rollbacksOf: (key) => newestFirst(records.cache.byIndex('history', key)),
    rollbacksOfClaim: (ns, name) => newestFirst(records.cache.byIndex('claim', `${ns}/${name}`)),
    now: () => Date.now(),
    graceMs: extraNumber(options.extra, GRACE_FLAG, GRACE_DEFAULT_MS),
    nodeStateDwellMs: extraNumber(options.extra, NODE_STATE_WAIT_FLAG, NODE_STATE_DWELL_MS),
    markWindowMs: extraNumber(options.extra, MARK_WINDOW_FLAG, MARK_WINDOW_DEFAULT_MS),
    maxRollbacks: extraNumber(options.extra, MAX_ROLLBACKS_FLAG, MAX_ROLLBACKS_DEFAULT),
    backoffBaseMs: extraNumber(options.extra, BACKOFF_FLAG, BACKOFF_DEFAULT_MS),
  };
  const historyTtlMs = extraNumber(options.extra, HISTORY_TTL_FLAG, HISTORY_TTL_DEFAULT_MS);
  const queue = new WorkQueue<RollbackKey>(ROLLBACK, { keyString: rollbackKeyString });
  const markDeps = {
    client,
    events,
    log,
    dryRun: options.dryRun,
    rememberDryRunMark: (name: string, labels: Record<string, string>, annotations: Record<string, string>) => {
      dryMarks.set(name, { labels, annotations });
      const v = pvs.cache.get(name);
      if (v) onVolume(v);
    },
  };
  const actuator = new RollbackActuator({ client, events, log, dryRun: options.dryRun });
  const claimWatch = new DeletedClaimWatch();
  const reconciler = new RollbackReconciler({
    world,
    pod: (ns, name) => pods.cache.get(`${ns}/${name}`),
    record: (name) => records.cache.get(name),
    client,
    log,
    dryRun: options.dryRun,
    marks: markDeps,
    historyTtlMs,
    actuator,
    claimWatch,
    // Every piece of evidence the caches hold, after the label as the server has it.
    reads: liveReads(
      client,
      (live) => unusedMarkDoubt(live, world),
      () => pods.lastResourceVersion(),
    ),
    observe: (c) => observe(c),
    enqueueRecord: (name) => queue.add(recordKey(name)),
  });

  const controller = new Controller<RollbackKey>(
    ROLLBACK,
    async (_ctx, key) => {
      switch (key.kind) {
        case 'volume':
          return requeueAfter(await reconciler.volume(key.name));
        case 'record':
          return requeueAfter(await reconciler.record(key.name));
        case 'pod':
          return requeueAfter(await reconciler.pod(key.namespace, key.name));
      }
    },
    {
      queue,
      workers: options.concurrentWorkers,
      // What the handlers queue for the objects cached now: every pod, volume and record (a pod's,
      // claim's, node's, attachment's or failure's event queues pods and volumes, a record's itself).
      startKeys: function* () {
        for (const r of records.cache.list()) yield recordKey(objectKey(r));
        for (const v of pvs.cache.list()) yield volumeKey(objectKey(v));
        for (const p of pods.cache.list()) yield podKeyOf(objectKey(p));
      },
    },
  );

  const enqueuePod = (p: Pod): void => queue.add(podKeyOf(objectKey(p)));
  const enqueueVolume = (v: PersistentVolume): void => queue.add(volumeKey(objectKey(v)));
  /** The pods' list (pods.lastListDone()) for which the claims were last asked to list again. */
  let claimsRelistedFor = 0;
  /**
   * A claim's state must be no older than the pods' list for its provisioning to be observed: a
   * pod that used its volume and was deleted before that list is in neither cache, and the pod left
   * waiting would look like the one it was provisioned for. Claims listed before (or while) the
   * pods were are listed again, once per pods' list: at start-up and after each relist of the pods.
   */
  const listClaimsAfterPods = (): void => {
    const podsList = pods.lastListDone();
    if (podsList === 0 || claimsRelistedFor === podsList || pvcs.listedAfter(pods)) return;
    claimsRelistedFor = podsList;
    log.info('claims listed again after the pods, so that a provisioning is observed only on claim states newer than the pods list');
    pvcs.relist();
  };
  void pods.waitForSync().then(listClaimsAfterPods);
  /** Records what this process sees of a claim's provisioning (see observeProvisioning). */
  const observe = (c: PersistentVolumeClaim): void => {
    const uid = c.metadata?.uid ?? '';
    const seen = observeProvisioning(c, world);
    if (!seen) return;
    // Not before the claims were listed after the pods (listClaimsAfterPods asks for that list once
    // the pods have listed); their candidates are looked at again once it is in (the claims' onRelist below).
    if (!pvcs.listedAfter(pods)) return;
    // Tests of the real binary wait for this line before they let the volume appear.
    if (observed.note(uid, c.metadata?.namespace ?? '', seen) === 'changed') log.debug('provisioning observed', { claim: objectKey(c), node: seen.node, podUid: seen.podUid });
  };
  const enqueueClaimUsers = (claimKey: string): void => {
    const c = pvcs.cache.get(claimKey);
    if (c) observe(c);
    for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, claimKey)) enqueuePod(p);
    for (const v of pvs.cache.byIndex('claim', claimKey)) enqueueVolume(v);
  };
  // The watch of claims being deleted has a handler of its own: a throw in the one below (which the
  // informer logs and swallows) must not keep a pod from it, a deleted pod's last state included.
  pods.addEventHandler({
    onAdd: (p) => claimWatch.note(p),
    onUpdate: (_, p) => claimWatch.note(p),
    onDelete: (p) => claimWatch.note(p),
    onRelist: () => claimWatch.relisted(),
  });
  const onPod = (p: Pod): void => {
    enqueuePod(p);
    for (const k of claimKeysOfPod(p)) enqueueClaimUsers(k);
  };
  pods.addEventHandler({
    onAdd: onPod,
    onUpdate: (_, p) => onPod(p),
    onDelete: (p) => {
      reconciler.forgetPod(p.metadata?.uid ?? '');
      // Its use outlives it (EndedUse), for every claim it named: the claim's own events may come
      // later than this (the claim watch lags the pod watch), with a provisioning then observed.
      // The last state the watch delivered holds its node and phase: spec.nodeName is never cleared.
      for (const k of claimKeysOfPod(p)) {
        const use = podUseOfClaim(p, splitKey(k).name);
        if (use) endedUse.record(k, `${use}, and was deleted`, Date.now(), podScheduledAt(p));
      }
      onPod(p);
    },
    // A gap in the pod watch: a pod may have been scheduled, used a volume and gone unseen, so no
    // unused mark is vouched for any longer (unwatchedSinceProvisioned), nor any provisioning seen.
    onRelist: () => {
      if (observed.size > 0) log.info('pods relisted after a gap in their watch: volumes marked unused are no longer vouched for', { observations: observed.size });
      observed.clear();
      // This list is the pods' current one already (Informer.listedAfter): claims listed before it
      // are listed again, and none is observed meanwhile.
      listClaimsAfterPods();
      for (const v of pvs.cache.byIndex('unused', 'unused')) enqueueVolume(v);
    },
  });
  const onVolume = (v: PersistentVolume): void => {
    enqueueVolume(v);
    const ref = v.spec?.claimRef;
    if (ref?.name) for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, `${ref.namespace}/${ref.name}`)) enqueuePod(p);
  };
  pvs.addEventHandler({ onAdd: onVolume, onUpdate: (_, v) => onVolume(v) });
  // A handler of its own, registered first: a selection's version is noted before anything is queued for it.
  pvcs.addEventHandler({ onAdd: (c) => selections.claimSeen(c), onUpdate: (_, c) => selections.claimSeen(c), onDelete: (c) => selections.claimGone(c), onRelist: () => selections.claimsRelisted() });
  pvcs.addEventHandler({
    onAdd: (c) => enqueueClaimUsers(objectKey(c)),
    onUpdate: (_, c) => enqueueClaimUsers(objectKey(c)),
    // Claims unchanged by a relist get no event: once the list is in (after this call's turn), look
    // at every claim that may be being provisioned again (observe, above).
    // Outside the informer's guard, where a throw would end the process: caught here.
    onRelist: () =>
      queueMicrotask(() => {
        try {
          for (const c of pvcs.cache.list()) if (c.metadata?.annotations?.[ANN_SELECTED_NODE] && !c.spec?.volumeName) enqueueClaimUsers(objectKey(c));
        } catch (err) {
          log.error('queueing the users of claims after a relist failed', { error: errorMessage(err) });
        }
      }),
    onDelete: (c) => {
      observed.delete(c.metadata?.uid ?? '');
      endedUse.forget(objectKey(c), deletionRequestedAt(c.metadata));
      enqueueClaimUsers(objectKey(c));
      // A rollback waiting for this claim to go can re-create it now.
      for (const r of records.cache.byIndex('claim', objectKey(c))) if (!isFinished(r)) queue.add(recordKey(r.metadata!.name!));
    },
  });
  const onNode = (n: Node): void => {
    for (const v of pvs.cache.byIndex('forNode', n.metadata?.name ?? '')) onVolume(v);
    if ((n.status?.volumesInUse ?? []).length > 0) for (const v of pvs.cache.byIndex('unused', 'unused')) enqueueVolume(v);
  };
  /**
   * A node that pods may be placed on again (or no longer) changes where a pod refused because a
   * static sibling volume allows no other node could go (decideRollback's heldElsewhere): the pods
   * of the volumes marked unused (the only ones a rollback undoes; with --dry-run, the marks it
   * would have written) that wait unscheduled look again, once per turn however many nodes changed
   * in it (a start-up list adds every node).
   */
  const onNodeSchedulingChanged = oncePerTurn(
    () => {
      const dryUnused = [...dryMarks.keys()].flatMap((name) => {
        const v = world.volume(name);
        return v && usageOf(v) === 'unused' ? [v] : [];
      });
      for (const v of [...pvs.cache.byIndex('unused', 'unused'), ...dryUnused]) {
        const ref = v.spec?.claimRef;
        if (ref?.name) for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, `${ref.namespace}/${ref.name}`)) if (!p.spec?.nodeName) enqueuePod(p);
      }
    },
    (err) => log.error('queueing the waiting pods of unused volumes after a node change failed', { error: errorMessage(err) }),
  );
  nodes.addEventHandler({
    onAdd: (n) => {
      onNode(n);
      onNodeSchedulingChanged();
    },
    onUpdate: (before, n) => {
      onNode(n);
      if (nodePlacementChanged(before, n)) onNodeSchedulingChanged();
    },
    onDelete: (n) => {
      onNode(n);
      onNodeSchedulingChanged();
    },
  });
  attachments.addEventHandler({
    onAdd: (a) => {
      const v = a.spec?.source?.persistentVolumeName ? world.volume(a.spec.source.persistentVolumeName) : undefined;
      if (v) enqueueVolume(v);
    },
  });
  // A class seen late (or changed) may make a failure evidence: the pods of its unbound claims look again.
  const onClass = (sc: StorageClass): void => {
    for (const c of pvcs.cache.list()) if (!c.spec?.volumeName && claimClass(c) === sc.metadata?.name) enqueueClaimUsers(objectKey(c));
  };
  classes.addEventHandler({ onAdd: onClass, onUpdate: (_, sc) => onClass(sc) });
  const onFailure = (e: Event): void => {
    const o = e.involvedObject;
    if (o?.namespace && o.name) enqueueClaimUsers(`${o.namespace}/${o.name}`);
  };
  failures.addEventHandler({ onAdd: onFailure, onUpdate: (_, e) => onFailure(e) });
  const onRecord = (r: ProvisioningRollback): void => queue.add(recordKey(objectKey(r)));
  records.addEventHandler({ onAdd: onRecord, onUpdate: (_, r) => onRecord(r) });
  return controller;
}
