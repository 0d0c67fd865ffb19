import { ANN_SELECTED_NODE, claimKeysOfPod, Controller, errorMessage, eventsAbout, extraNumber, FirstSeen, involvedObjectUid, objectKey, oncePerTurn, POD_CLAIM_INDEX, PROVISIONING_EVENTS, projectClaim, projectNode, projectPod, requeueAfter, Resources, WorkQueue } from '@topovol/shared';
import type { ControllerEnv, Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { BinderActuator } from './actuator.js';
import { AssumeCache } from './assume-cache.js';
import { binderKeyPriority, binderKeyString, claimKeyOf, volumeKey } from './binder-key.js';
import type { BinderKey } from './binder-key.js';
import type { BinderWorld } from './binder-world.js';
import { registerCollectorMetrics } from './binder-metrics.js';
import { pickDefaultClass, volumeClass } from './claim-helpers.js';
import { PROVISIONED_VOLUME_NAMES_FLAG, shortGraceWarning, STALE_SELECTED_NODE_GRACE_DEFAULT_MS, STALE_SELECTED_NODE_GRACE_FLAG, SYNC_PERIOD_DEFAULT_MS, SYNC_PERIOD_FLAG, WORKERS_DEFAULT, WORKERS_FLAG } from './binder-flags.js';
import { volumeNamePatternsOf } from './provisioned-volume-names.js';
import { ProvisioningActivity } from './provisioning-activity.js';
import { slimProvisioningEvent } from './provisioning-events.js';
import { BinderReconciler } from './reconcile-binder.js';
import { keysNeedingSync } from './resync-keys.js';
import { watchForSecondBinder } from './second-binder.js';
import { parseIssueSeen } from './selected-node-checks.js';
import type { SelectedNodeIssueSeen } from './selected-node-checks.js';
import { claimBoundToVolume, claimBySelectedNode, claimWaitingForVolume, podByNodeName, unboundClaimByClass } from './binder-indexes.js';
import { consumerChanged, nodeChanged } from './consumer-change.js';
import { BinderVolumes } from './volume-view.js';
import { newlyOffered } from './volume-offer.js';

const PV_BINDER = 'pv-binder';

/** The pv-binder loop: one queue with claim and volume keys, decisions over the informer caches. */
export function setupBinder(env: ControllerEnv): Controller<BinderKey> {
  const { informers, client, events, options, log } = env;
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const pvcs = informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
  const classes = informers.forResource<StorageClass>(Resources.storageClasses);
  const nodes = informers.forResource<Node>(Resources.nodes, { transform: projectNode });
  const pods = informers.forResource<Pod>(Resources.pods, { transform: projectPod });

  // The external provisioner's per-attempt "Provisioning" Events: evidence that provisioning is under way.
  const provisioningEvents = informers.forResource<Event>(Resources.events, {
    fieldSelector: PROVISIONING_EVENTS,
    transform: slimProvisioningEvent,
  });

  /** Volumes a worker has decided to bind and is writing now. */
  const inFlight = new Set<string>();
  // Candidates are found through indexes, never a scan of all volumes.
  const bv = new BinderVolumes((name) => pvs.cache.get(name), inFlight);
  const { index } = bv;
  const volumes = bv.assumed;
  pvcs.addIndex('class', unboundClaimByClass);
  pvcs.addIndex('selectedNode', claimBySelectedNode);
  pvcs.addIndex('waitingForVolume', claimWaitingForVolume);
  pvcs.addIndex('boundToVolume', claimBoundToVolume);
  pods.addIndex(POD_CLAIM_INDEX, claimKeysOfPod);
  pods.addIndex('nodeName', podByNodeName);
  provisioningEvents.addIndex('claimUid', involvedObjectUid);

  const claims = new AssumeCache<PersistentVolumeClaim>();
  /** Selected-node problems noted by the decisions, by claim uid (memory only: a restart starts the grace again). */
  const issues = new FirstSeen<SelectedNodeIssueSeen>();
  const activity = new ProvisioningActivity((ns, name, uid) => (pvcs.hasSynced() ? pvcs.cache.get(`${ns}/${name}`)?.metadata?.uid === uid : undefined));
  /** Selected nodes removed from unbound claims (the provisioner gave them back), by claim uid. */
  const removals = new Map<string, { count: number; last: number }>();
  const graceMs = extraNumber(options.extra, STALE_SELECTED_NODE_GRACE_FLAG, STALE_SELECTED_NODE_GRACE_DEFAULT_MS);
  const short = shortGraceWarning(graceMs);
  if (short) log.warn(short, { grace: `${graceMs / 1000}s` });
  const world: BinderWorld = {
    ...bv.view,
    claim: (ns, name) => claims.get(`${ns}/${name}`, pvcs.cache.get(`${ns}/${name}`)),
    storageClass: (name) => classes.cache.get(name),
    defaultStorageClass: () => pickDefaultClass(classes.cache.list()),
    node: (name) => nodes.cache.get(name),
    podsUsingClaim: (ns, name) => pods.cache.byIndex(POD_CLAIM_INDEX, `${ns}/${name}`),
    claimsBoundTo: (name) => pvcs.cache.byIndex('boundToVolume', name),
    now: () => Date.now(),
    staleSelectedNodeGraceMs: graceMs,
    selectedNodeIssue: (c) => {
      const seen = issues.get(c.metadata?.uid ?? '');
      return seen && { ...parseIssueSeen(seen.value), since: seen.since };
    },
    selectedNodeRemovals: (c) => removals.get(c.metadata?.uid ?? ''),
    lastProvisioningActivity: (c) => {
      // Only Events in the claim's namespace that name it: another namespace could otherwise hold
      // off the removal of this claim's stale selected-node with an Event carrying its uid.
      // Events deleted since (their TTL, or a tenant) still count: activity.rememberedFor.
      const now = Date.now();
      const times = eventsAbout(provisioningEvents.cache.byIndex('claimUid', c.metadata?.uid ?? ''), c).map((e) => activity.timeOf(e, now));
      const remembered = activity.rememberedFor(c);
      if (remembered !== undefined) times.push(remembered);
      // Not a spread: anyone who may create Events in the namespace decides how many there are.
      return times.length > 0 ? times.reduce((m, t) => Math.max(m, t), -Infinity) : undefined;
    },
  };
  const actuator = new BinderActuator({ client, events, volumes, claims, log, dryRun: options.dryRun });
  // Only the leader reports (its workers run), as only it records the binder's other Events.
  watchForSecondBinder(pvs, events, log, () => controller.isRunning());
  registerCollectorMetrics(
    () => pvs.cache.list(),
    () => pvcs.cache.list(),
    (name) => classes.cache.get(name) !== undefined,
  );

  // Claims that may have passed a reserved volume by, once its reservation failed (BinderReconciler.passedOver).
  const requeueClaims = (keys: string[]): void => {
    for (const k of keys) enqueueClaimKey(k);
  };
  const volumeNames = volumeNamePatternsOf(options.extra[PROVISIONED_VOLUME_NAMES_FLAG]);
  const reconciler = new BinderReconciler({ world, client, actuator, volumes, claims, inFlight, requeueClaims, selectedNodeIssues: issues, provisioningActivity: activity, volumeNames, dryRun: options.dryRun });

  const queue = new WorkQueue<BinderKey>(PV_BINDER, { keyString: binderKeyString, priority: binderKeyPriority });
  const controller = new Controller<BinderKey>(
    PV_BINDER,
    async (ctx, key) => {
      if (key.kind === 'claim') return requeueAfter(await reconciler.claim(key.namespace, key.name));
      return requeueAfter(await reconciler.volume(key.name, ctx));
    },
    {
      queue,
      workers: extraNumber(options.extra, WORKERS_FLAG, WORKERS_DEFAULT),
      // Every claim and volume, as the informers' adds queued them (upstream's binder does not start
      // its informers before it leads). Every other handler queues one of these or a gone claim's key.
      startKeys: function* () {
        for (const c of pvcs.cache.list()) yield claimKeyOf(objectKey(c));
        for (const v of pvs.cache.list()) yield volumeKey(objectKey(v));
      },
    },
  );
  // Upstream's periodic resync of every claim and volume: level-triggered, so whatever changed
  // without an event we watch (a node that joined, a class created later) is seen within a period.
  // Only the keys whose decision plans something are queued (resync-keys.ts).
  controller.resyncEvery(extraNumber(options.extra, SYNC_PERIOD_FLAG, SYNC_PERIOD_DEFAULT_MS), () =>
    keysNeedingSync(pvcs.cache.list(), pvs.cache.list(), world, (k: BinderKey) => queue.isQueued(k)),
  );

  const enqueueClaimKey = (key: string): void => queue.add(claimKeyOf(key));
  const enqueueClaim = (c: PersistentVolumeClaim): void => enqueueClaimKey(objectKey(c));
  const enqueueVolume = (v: PersistentVolume): void => queue.add(volumeKey(objectKey(v)));
  // A free volume may be what a waiting claim of its class needs: every such claim is queued again.
  // That walk is O(claims of the class), so wakes are coalesced per class until the next turn of
  // the event loop: an informer's initial list of N volumes costs one walk, not N.
  const wakeClasses = new Set<string>();
  const wake = oncePerTurn(
    () => {
      const classes = [...wakeClasses];
      wakeClasses.clear();
      for (const k of classes) for (const c of pvcs.cache.byIndex('class', k)) if (!c.spec?.volumeName) enqueueClaim(c);
    },
    (err) => log.error('waking the claims waiting for a volume failed', { error: errorMessage(err) }),
  );
  const enqueueWaitingClaims = (cls: string): void => {
    wakeClasses.add(cls);
    wake();
  };

  // A volume a claim recorded Bound to is held for it (claimsBoundTo, volume-hold.ts). When the
  // hold ends, by the claim's delete or by its phase leaving Bound (a status write of another
  // controller or by hand), a held volume with no claimRef may be free again (unless another Bound
  // claim names it), and nothing about the volume changed to say so: the claims that wait for it are queued.
  const holdsEnded = (was: PersistentVolumeClaim, now: PersistentVolumeClaim | undefined): void => {
    const still = now ? claimBoundToVolume(now) : [];
    for (const n of claimBoundToVolume(was)) {
      const v = still.includes(n) ? undefined : world.volume(n);
      if (v && !v.spec?.claimRef) {
        enqueueVolume(v);
        enqueueWaitingClaims(volumeClass(v));
        // And the claims that name it (volume-hold.ts).
        for (const w of pvcs.cache.byIndex('waitingForVolume', n)) enqueueClaim(w);
      }
    }
  };
  const claimGone = (c: PersistentVolumeClaim): void => {
    claims.forget(objectKey(c));
    reconciler.forgetClaim(objectKey(c));
    issues.forget(c.metadata?.uid ?? '');
    removals.delete(c.metadata?.uid ?? '');
    activity.forgetClaim(c);
    // Its volume may now be Released; or, held for it with no claimRef, free.
    const v = c.spec?.volumeName ? world.volume(c.spec.volumeName) : undefined;
    if (v) enqueueVolume(v);
    holdsEnded(c, undefined);
    for (const n of index.preBoundTo(c.metadata?.namespace ?? '', c.metadata?.name ?? '')) {
      const pv = world.volume(n);
      if (pv && pv.spec?.claimRef?.uid === c.metadata?.uid) enqueueVolume(pv);
    }
  };
  pvcs.addEventHandler({
    onAdd: enqueueClaim,
    onUpdate: (old, c) => {
      // Deleted and made again under its name while the watch was down: a relist shows that as an
      // update. The old claim's volume must hear of it now, not at the next re-sync (which
      // --pvclaimbinder-sync-period=0 turns off).
      const same = old.metadata?.uid === c.metadata?.uid;
      if (!same) claimGone(old);
      else holdsEnded(old, c);
      if (same && old.metadata?.annotations?.[ANN_SELECTED_NODE] && !c.metadata?.annotations?.[ANN_SELECTED_NODE] && !c.spec?.volumeName) {
        const uid = c.metadata?.uid ?? '';
        removals.set(uid, { count: (removals.get(uid)?.count ?? 0) + 1, last: Date.now() });
      }
      if (c.spec?.volumeName) activity.forgetClaim(c);
      enqueueClaim(c);
    },
    onDelete: claimGone,
  });
  const onVolume = (old: PersistentVolume | undefined, v: PersistentVolume): void => {
    enqueueVolume(v);
    const ref = v.spec?.claimRef;
    // The claim it pointed at before (its claimRef cleared or changed, or the volume deleted and
    // made again under its name while the watch was down) may now be Lost, or free to bind.
    const was = old?.spec?.claimRef;
    if (was?.name && was.namespace && (was.name !== ref?.name || was.namespace !== ref.namespace)) enqueueClaimKey(`${was.namespace}/${was.name}`);
    if (ref?.name && ref.namespace) enqueueClaimKey(`${ref.namespace}/${ref.name}`);
    // A volume that is (again) free, or offers something new, may be what a waiting claim needs.
    else if (newlyOffered(old, v)) enqueueWaitingClaims(volumeClass(v));
    // A claim that names this volume may have been decided before the volume was in the cache
    // (created together, the claim's event first): without this it waited for the re-sync.
    for (const c of pvcs.cache.byIndex('waitingForVolume', objectKey(v))) enqueueClaim(c);
  };
  pvs.addEventHandler({
    onAdd: (v) => {
      bv.observed(v);
      onVolume(undefined, v);
    },
    onUpdate: (old, v) => {
      bv.observed(v);
      onVolume(old, v);
    },
    onDelete: (v) => {
      bv.deleted(objectKey(v));
      reconciler.volumeGone(objectKey(v));
      const ref = v.spec?.claimRef;
      if (ref?.name && ref.namespace) enqueueClaimKey(`${ref.namespace}/${ref.name}`);
    },
  });
  classes.addEventHandler({
    onAdd: (sc) => {
      enqueueWaitingClaims(sc.metadata?.name ?? '');
      enqueueWaitingClaims('');
    },
    onUpdate: (_, sc) => {
      enqueueWaitingClaims(sc.metadata?.name ?? '');
      enqueueWaitingClaims('');
    },
  });
  const onPod = (p: Pod): void => {
    for (const k of claimKeysOfPod(p)) enqueueClaimKey(k);
  };
  pods.addEventHandler({
    onAdd: onPod,
    onUpdate: (old, p) => {
      if (!consumerChanged(old, p)) return;
      // A pod re-created under the same name may use other claims than the one it replaced.
      for (const k of new Set([...claimKeysOfPod(old), ...claimKeysOfPod(p)])) enqueueClaimKey(k);
    },
    onDelete: onPod,
  });
  /** Claims that wait on a node: selected for them, or where a hand-placed pod of theirs runs. */
  const enqueueNodeClaims = (n: Node): void => {
    const name = n.metadata?.name ?? '';
    for (const c of pvcs.cache.byIndex('selectedNode', name)) enqueueClaim(c);
    for (const p of pods.cache.byIndex('nodeName', name)) onPod(p);
  };
  nodes.addEventHandler({
    onAdd: (n) => {
      index.upsertNode(n);
      enqueueNodeClaims(n);
    },
    onDelete: (n) => {
      index.deleteNode(n.metadata?.name ?? '');
      enqueueNodeClaims(n);
    },
    onUpdate: (old, n) => {
      if (!nodeChanged(old, n)) return;
      index.upsertNode(n);
      enqueueNodeClaims(n);
    },
  });
  provisioningEvents.addEventHandler({
    onAdd: (e) => {
      activity.observe(e, Date.now());
      const o = e.involvedObject;
      if (o?.namespace && o.name) enqueueClaimKey(`${o.namespace}/${o.name}`);
    },
    onUpdate: (old, e) => activity.eventUpdated(old, e, Date.now()),
    onDelete: (e) => activity.eventDeleted(e),
  });
  return controller;
}
