import { classifyError, Controller, objectKey, projectNode, projectPod, Resources, splitKey } from '@topovol/shared';
import type { ControllerEnv, Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { BinderActuator } from './actuator.js';
import { ANN_SELECTED_NODE } from './annotations.js';
import { AssumeCache } from './assume-cache.js';
import type { BinderWorld } from './binder-world.js';
import { countBind, observeBind, registerCollectorMetrics } from './binder-metrics.js';
import { claimClass, pickDefaultClass, volumeClass } from './claim-helpers.js';
import { decideClaim } from './decide-claim.js';
import { decideVolume } from './decide-volume.js';
import { STALE_SELECTED_NODE_GRACE_FLAG, STALE_SELECTED_NODE_GRACE_DEFAULT_MS } from './binder-flags.js';
import { eventTime, slimProvisioningEvent } from './provisioning-events.js';
import { VolumeIndex } from './volume-index.js';

const CLAIM = 'pvc/';
const VOLUME = 'pv/';

/** Pods only matter for the claims they use and where they run: cache just that. */
const claimsOfPod = (p: Pod): string[] => (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [`${p.metadata?.namespace}/${v.persistentVolumeClaim.claimName}`] : []));

/** The pv-binder loop: one queue with claim and volume keys, decisions over the informer caches. */
export function setupBinder(env: ControllerEnv): Controller {
  const { informers, client, events, options, log } = env;
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const pvcs = informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims);
  const classes = informers.forResource<StorageClass>(Resources.storageClasses);
  const nodes = informers.forResource<Node>(Resources.nodes, { transform: projectNode });
  const pods = informers.forResource<Pod>(Resources.pods, { transform: projectPod });

  // The external provisioner's per-attempt "Provisioning" Events: evidence that provisioning is under way.
  const provisioningEvents = informers.forResource<Event>(Resources.events, {
    fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,reason=Provisioning',
    transform: slimProvisioningEvent,
  });

  // Candidates are found through indexes, never a scan of all volumes.
  const index = new VolumeIndex();
  pvcs.addIndex('class', (c) => (c.spec?.volumeName ? [] : [claimClass(c)]));
  pvcs.addIndex('selectedNode', (c) => {
    const n = c.metadata?.annotations?.[ANN_SELECTED_NODE];
    return n ? [n] : [];
  });
  pods.addIndex('claim', claimsOfPod);
  provisioningEvents.addIndex('claimUid', (e) => (e.involvedObject?.uid ? [e.involvedObject.uid] : []));

  const volumes = new AssumeCache<PersistentVolume>();
  const claims = new AssumeCache<PersistentVolumeClaim>();
  const assumedVolume = (name: string): PersistentVolume | undefined => volumes.get(name, pvs.cache.get(name));
  const consumerless = new Map<string, number>();
  const graceFlag = options.extra[STALE_SELECTED_NODE_GRACE_FLAG];
  /** Volumes a worker has decided to bind and is writing now. */
  const inFlight = new Set<string>();
  const world: BinderWorld = {
    volume: assumedVolume,
    preBoundVolumes: (ns, name) => index.preBoundTo(ns, name).flatMap((n) => assumedVolume(n) ?? []),
    *freeVolumes(cls, minBytes, nodeName) {
      for (const n of nodeName === undefined ? index.freeVolumes(cls, minBytes) : index.freeVolumesForNode(cls, nodeName, minBytes)) {
        if (inFlight.has(n)) continue;
        const v = assumedVolume(n);
        if (v) yield v;
      }
    },
    claim: (ns, name) => claims.get(`${ns}/${name}`, pvcs.cache.get(`${ns}/${name}`)),
    storageClass: (name) => classes.cache.get(name),
    defaultStorageClass: () => pickDefaultClass(classes.cache.list()),
    node: (name) => nodes.cache.get(name),
    podsUsingClaim: (ns, name) => pods.cache.byIndex('claim', `${ns}/${name}`),
    now: () => Date.now(),
    staleSelectedNodeGraceMs: typeof graceFlag === 'number' ? graceFlag : STALE_SELECTED_NODE_GRACE_DEFAULT_MS,
    consumerlessSince: (ns, name) => {
      const key = `${ns}/${name}`;
      let t = consumerless.get(key);
      if (t === undefined) consumerless.set(key, (t = Date.now()));
      return t;
    },
    lastProvisioningActivity: (c) => {
      const times = provisioningEvents.cache.byIndex('claimUid', c.metadata?.uid ?? '').map(eventTime);
      return times.length > 0 ? Math.max(...times) : undefined;
    },
  };
  const actuator = new BinderActuator({ client, events, volumes, claims, log, dryRun: options.dryRun });
  registerCollectorMetrics(
    () => pvs.cache.list(),
    () => pvcs.cache.list(),
  );

  const controller = new Controller(
    'pv-binder',
    async (ctx, key) => {
      if (key.startsWith(CLAIM)) {
        const { namespace, name } = splitKey(key.slice(CLAIM.length));
        const claim = world.claim(namespace ?? '', name);
        if (!claim) return;
        const wasBound = claim.status?.phase === 'Bound';
        const actions = decideClaim(claim, world);
        // Reserved from the decision (no await in between) until the write is done, so that other
        // workers pick the next volume instead of racing for this one into a Conflict.
        const picked = actions.flatMap((a) => (a.kind === 'bindVolume' ? [a.volume.metadata!.name!] : []));
        for (const n of picked) inFlight.add(n);
        try {
          await actuator.run(actions);
        } catch (err) {
          if (actions.some((a) => a.kind === 'bindVolume')) countBind(classifyError(err).kind === 'Conflict' ? 'conflict' : 'error');
          // Our view was stale: drop what we assumed so the retry reads the informer's truth.
          if (classifyError(err).kind === 'Conflict') {
            claims.forget(`${namespace}/${name}`);
            for (const a of actions) if (a.kind === 'bindVolume') volumes.forget(a.volume.metadata!.name!);
          }
          throw err;
        } finally {
          for (const n of picked) inFlight.delete(n);
        }
        const bound = actions.find((a) => a.kind === 'bindClaim');
        if (bound && !wasBound && !options.dryRun) {
          countBind('bound');
          const since = Date.parse(claim.metadata?.creationTimestamp ?? '');
          const mode = world.storageClass(claimClass(claim))?.volumeBindingMode ?? 'Immediate';
          if (!Number.isNaN(since)) observeBind(mode, Math.max(0, (Date.now() - since) / 1000));
        }
        ctx.log.debug('claim synced', { actions: actions.map((a) => a.kind) });
        const waits = actions.flatMap((a) => (a.kind === 'requeueAfter' ? [a.ms] : []));
        if (waits.length > 0) return Math.min(...waits);
      } else if (key.startsWith(VOLUME)) {
        const volume = world.volume(key.slice(VOLUME.length));
        if (!volume) return;
        await actuator.run(decideVolume(volume, world));
      }
    },
    { workers: options.concurrentWorkers },
  );

  const enqueueClaim = (c: PersistentVolumeClaim): void => controller.enqueue(CLAIM + objectKey(c));
  const enqueueVolume = (v: PersistentVolume): void => controller.enqueue(VOLUME + objectKey(v));
  const enqueueWaitingClaims = (cls: string): void => {
    for (const c of pvcs.cache.byIndex('class', cls)) if (!c.spec?.volumeName) enqueueClaim(c);
  };

  pvcs.addEventHandler({
    onAdd: enqueueClaim,
    onUpdate: (_, c) => enqueueClaim(c),
    onDelete: (c) => {
      claims.forget(objectKey(c));
      consumerless.delete(objectKey(c));
      // Its volume may now be Released.
      const v = c.spec?.volumeName ? world.volume(c.spec.volumeName) : undefined;
      if (v) enqueueVolume(v);
      for (const n of index.preBoundTo(c.metadata?.namespace ?? '', c.metadata?.name ?? '')) {
        const pv = world.volume(n);
        if (pv && pv.spec?.claimRef?.uid === c.metadata?.uid) enqueueVolume(pv);
      }
    },
  });
  const onVolume = (v: PersistentVolume): void => {
    enqueueVolume(v);
    const ref = v.spec?.claimRef;
    if (ref?.name && ref.namespace) controller.enqueue(`${CLAIM}${ref.namespace}/${ref.name}`);
    // A volume that (again) has no claim may be what a waiting claim needs.
    else if (!v.spec?.claimRef) enqueueWaitingClaims(volumeClass(v));
  };
  pvs.addEventHandler({
    onAdd: (v) => {
      index.upsertVolume(v);
      onVolume(v);
    },
    onUpdate: (_, v) => {
      index.upsertVolume(v);
      onVolume(v);
    },
    onDelete: (v) => {
      index.deleteVolume(objectKey(v));
      volumes.forget(objectKey(v));
      const ref = v.spec?.claimRef;
      if (ref?.name && ref.namespace) controller.enqueue(`${CLAIM}${ref.namespace}/${ref.name}`);
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
  const onPod = (p: Pod, live: boolean): void => {
    for (const k of claimsOfPod(p)) {
      // A pod that may consume the claim restarts the stale-selected-node clock.
      if (live && !p.metadata?.deletionTimestamp) consumerless.delete(k);
      controller.enqueue(CLAIM + k);
    }
  };
  pods.addEventHandler({ onAdd: (p) => onPod(p, true), onUpdate: (_, p) => onPod(p, true), onDelete: (p) => onPod(p, false) });
  const enqueueSelecting = (n: Node): void => {
    for (const c of pvcs.cache.byIndex('selectedNode', n.metadata?.name ?? '')) enqueueClaim(c);
  };
  const sameLabels = (a: Node, b: Node): boolean => JSON.stringify(a.metadata?.labels ?? {}) === JSON.stringify(b.metadata?.labels ?? {});
  nodes.addEventHandler({
    onAdd: (n) => index.upsertNode(n),
    onDelete: (n) => {
      index.deleteNode(n.metadata?.name ?? '');
      enqueueSelecting(n);
    },
    onUpdate: (old, n) => {
      if (!sameLabels(old, n)) index.upsertNode(n);
      enqueueSelecting(n);
    },
  });
  provisioningEvents.addEventHandler({
    onAdd: (e) => {
      const o = e.involvedObject;
      if (o?.namespace && o.name) controller.enqueue(`${CLAIM}${o.namespace}/${o.name}`);
    },
  });
  return controller;
}
