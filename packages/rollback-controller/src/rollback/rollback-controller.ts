import { claimKeysOfPod, classifyError, Controller, DONE, isNotFound, objectKey, POD_CLAIM_INDEX, PROVISIONING_FAILED_EVENTS, projectNode, projectPod, requeueAfter, Resources, WorkQueue } from '@topovol/shared';
import type { ControllerEnv, Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from '@topovol/shared';
import { decideMark } from './decide-mark.js';
import { decideRollback } from './decide-rollback.js';
import { decideIntent } from './intent/decide-intent.js';
import { isFinished, ProvisioningRollbacks } from './intent/provisioning-rollback.js';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';
import { writeMark } from './mark-actuator.js';
import { ANN_PROVISIONED_FOR_NODE, usageOf } from './marks.js';
import { observeProvisioning } from './provisioning-observation.js';
import { RollbackActuator } from './rollback-actuator.js';
import { podKeyOf, recordKey, rollbackKeyString, volumeKey } from './rollback-key.js';
import type { RollbackKey } from './rollback-key.js';
import { BACKOFF_FLAG, GRACE_FLAG, HISTORY_TTL_FLAG, MARK_WINDOW_FLAG, MAX_ROLLBACKS_FLAG } from './rollback-flags.js';
import { countRollback } from './rollback-metrics.js';
import type { ProvisioningObservation, RollbackWorld } from './rollback-world.js';
import { usedEvidence, volumesInUseMentions } from './usage-evidence.js';
import { historyKeyOfPod, historyKeyOfRecord } from './workload.js';

const ROLLBACK = 'rollback';

const numberFlag = (v: unknown, fallback: number): number => (typeof v === 'number' ? v : fallback);
const created = (o: { metadata?: { creationTimestamp?: string } }): number => Date.parse(o.metadata?.creationTimestamp ?? '') || 0;

/**
 * The rollback loop (kubernetes #94217): marks volumes on volume keys, decides for stuck pods on pod
 * keys, and advances recorded rollbacks (ProvisioningRollback objects) on record keys.
 */
export function setupRollback(env: ControllerEnv): Controller<RollbackKey> {
  const { informers, client, events, options, log } = env;
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const pvcs = informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims);
  const pods = informers.forResource<Pod>(Resources.pods, { transform: projectPod });
  const nodes = informers.forResource<Node>(Resources.nodes, { transform: projectNode });
  const attachments = informers.forResource<VolumeAttachment>(Resources.volumeAttachments);
  const failures = informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS });
  const records = informers.forResource<ProvisioningRollback>(ProvisioningRollbacks);

  pods.addIndex(POD_CLAIM_INDEX, claimKeysOfPod);
  pods.addIndex('uid', (p) => (p.metadata?.uid ? [p.metadata.uid] : []));
  pvs.addIndex('claim', (v) => (v.spec?.claimRef?.name ? [`${v.spec.claimRef.namespace}/${v.spec.claimRef.name}`] : []));
  pvs.addIndex('forNode', (v) => {
    const n = v.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE];
    return n ? [n] : [];
  });
  pvs.addIndex('unused', (v) => (usageOf(v) === 'unused' ? ['unused'] : []));
  attachments.addIndex('pv', (a) => (a.spec?.source?.persistentVolumeName ? [a.spec.source.persistentVolumeName] : []));
  failures.addIndex('claimUid', (e) => (e.involvedObject?.uid ? [e.involvedObject.uid] : []));
  records.addIndex('history', (r) => (r.spec ? [historyKeyOfRecord(r)] : []));
  records.addIndex('claim', (r) => (r.spec ? r.spec.claims.map((c) => `${r.spec.pod.namespace}/${c.name}`) : []));

  /** Facts this process saw (memory only: a restart sees afresh, and never marks what it did not see). */
  const observed = new Map<string, ProvisioningObservation>();
  const stuck = new Map<string, number>();
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
    podsUsingClaim: (ns, name) => pods.cache.byIndex(POD_CLAIM_INDEX, `${ns}/${name}`),
    podExists: (uid) => pods.cache.byIndex('uid', uid).length > 0,
    nodesUsingVolume: (v) => nodes.cache.list().flatMap((n) => ((n.status?.volumesInUse ?? []).some((e) => volumesInUseMentions(e, v)) ? [n.metadata?.name ?? ''] : [])),
    attachmentsOf: (name) => attachments.cache.byIndex('pv', name),
    // An Event's involvedObject is written by whoever creates the Event: in the claim's namespace and
    // naming it, or it is not about this claim (a uid alone can be copied into any namespace).
    provisioningFailures: (c) =>
      failures.cache.byIndex('claimUid', c.metadata?.uid ?? '').filter((e) => e.metadata?.namespace === c.metadata?.namespace && e.involvedObject.namespace === c.metadata?.namespace && e.involvedObject.name === c.metadata?.name),
    provisioningObserved: (uid) => observed.get(uid),
    rollbacksOf: (key) => records.cache.byIndex('history', key).sort((a, b) => created(b) - created(a)),
    now: () => Date.now(),
    stuckSince: (uid) => stuck.get(uid),
    graceMs: numberFlag(options.extra[GRACE_FLAG], 2 * 60_000),
    markWindowMs: numberFlag(options.extra[MARK_WINDOW_FLAG], 10 * 60_000),
    maxRollbacks: numberFlag(options.extra[MAX_ROLLBACKS_FLAG], 3),
    backoffBaseMs: numberFlag(options.extra[BACKOFF_FLAG], 30_000),
  };
  const historyTtlMs = numberFlag(options.extra[HISTORY_TTL_FLAG], 7 * 24 * 3_600_000);
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
  const actuator = new RollbackActuator({
    client,
    events,
    log,
    dryRun: options.dryRun,
    // The label as the server has it (the admission policy keeps anyone else from setting unused),
    // and every piece of evidence the caches hold.
    volumeUse: async (name) => {
      let live: PersistentVolume;
      try {
        live = await client.get<PersistentVolume>(Resources.persistentVolumes, name);
      } catch (err) {
        if (isNotFound(err)) return 'it is gone';
        throw err;
      }
      if (usageOf(live) !== 'unused') return `its mark is ${usageOf(live) ?? 'missing'}`;
      return usedEvidence(live, world);
    },
  });

  /** The unfinished rollback of the pod's workload, if any: it is finished before anything new is decided. */
  const inProgress = (pod: Pod): ProvisioningRollback | undefined => world.rollbacksOf(historyKeyOfPod(pod)).find((r) => !isFinished(r));

  const syncPod = async (namespace: string, name: string): Promise<number | void> => {
    const pod = pods.cache.get(`${namespace}/${name}`);
    if (!pod) return;
    const running = inProgress(pod);
    if (running) {
      queue.add(recordKey(running.metadata!.name!));
      return;
    }
    const decision = decideRollback(pod, world);
    if (decision.kind !== 'none') log.debug('pod decided', { pod: `${namespace}/${name}`, decision: decision.kind, why: 'why' in decision ? decision.why : undefined });
    const uid = pod.metadata?.uid ?? '';
    if (decision.kind === 'wait' && decision.firstSeen !== undefined) stuck.set(uid, decision.firstSeen);
    if (decision.kind !== 'wait') stuck.delete(uid);
    await actuator.decide(pod, decision);
    if (decision.kind === 'wait') return decision.ms;
  };

  const syncRecord = async (name: string): Promise<number | void> => {
    const r = records.cache.get(name);
    if (!r) return;
    if (isFinished(r)) {
      const done = Date.parse(r.status?.completionTime ?? '') || created(r);
      const left = done + historyTtlMs - Date.now();
      if (left > 0) return left;
      await client.delete(ProvisioningRollbacks, name, undefined, { preconditions: { uid: r.metadata?.uid } }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      return;
    }
    if (options.dryRun) return;
    return actuator.advance(r, decideIntent(r, (ns, n) => world.claim(ns, n)));
  };

  const controller = new Controller<RollbackKey>(
    ROLLBACK,
    async (_ctx, key) => {
      try {
        switch (key.kind) {
          case 'volume': {
            const v = world.volume(key.name);
            if (!v) return DONE;
            // What the claim shows now counts too (a watch may deliver the volume before the claim).
            const ref = v.spec?.claimRef;
            const c = ref?.name ? world.claim(ref.namespace ?? '', ref.name) : undefined;
            if (c) observe(c);
            await writeMark(markDeps, decideMark(v, world));
            return DONE;
          }
          case 'record':
            return requeueAfter(await syncRecord(key.name));
          case 'pod':
            return requeueAfter(await syncPod(key.namespace, key.name));
        }
      } catch (err) {
        // Conflicts are retried on fresh data as a matter of course; anything else is a failure.
        if (key.kind !== 'volume' && classifyError(err).kind !== 'Conflict') countRollback('error');
        throw err;
      }
    },
    { queue, workers: options.concurrentWorkers },
  );

  const enqueuePod = (p: Pod): void => queue.add(podKeyOf(objectKey(p)));
  const enqueueVolume = (v: PersistentVolume): void => queue.add(volumeKey(objectKey(v)));
  /** Records what this process sees of a claim's provisioning (see observeProvisioning). */
  const observe = (c: PersistentVolumeClaim): void => {
    const uid = c.metadata?.uid ?? '';
    const seen = observeProvisioning(c, world);
    const had = observed.get(uid);
    if (seen && (!had || had.node !== seen.node || had.podUid !== seen.podUid)) {
      observed.set(uid, seen);
      // Tests of the real binary wait for this line before they let the volume appear.
      log.debug('provisioning observed', { claim: objectKey(c), node: seen.node, podUid: seen.podUid });
    }
  };
  const enqueueClaimUsers = (claimKey: string): void => {
    const c = pvcs.cache.get(claimKey);
    if (c) observe(c);
    for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, claimKey)) enqueuePod(p);
    for (const v of pvs.cache.byIndex('claim', claimKey)) enqueueVolume(v);
  };
  const onPod = (p: Pod): void => {
    enqueuePod(p);
    for (const k of claimKeysOfPod(p)) enqueueClaimUsers(k);
  };
  pods.addEventHandler({ onAdd: onPod, onUpdate: (_, p) => onPod(p), onDelete: onPod });
  const onVolume = (v: PersistentVolume): void => {
    enqueueVolume(v);
    const ref = v.spec?.claimRef;
    if (ref?.name) for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, `${ref.namespace}/${ref.name}`)) enqueuePod(p);
  };
  pvs.addEventHandler({ onAdd: onVolume, onUpdate: (_, v) => onVolume(v) });
  pvcs.addEventHandler({
    onAdd: (c) => enqueueClaimUsers(objectKey(c)),
    onUpdate: (_, c) => enqueueClaimUsers(objectKey(c)),
    onDelete: (c) => {
      observed.delete(c.metadata?.uid ?? '');
      enqueueClaimUsers(objectKey(c));
      // A rollback waiting for this claim to go can re-create it now.
      for (const r of records.cache.byIndex('claim', objectKey(c))) if (!isFinished(r)) queue.add(recordKey(r.metadata!.name!));
    },
  });
  const onNode = (n: Node): void => {
    for (const v of pvs.cache.byIndex('forNode', n.metadata?.name ?? '')) onVolume(v);
    if ((n.status?.volumesInUse ?? []).length > 0) for (const v of pvs.cache.byIndex('unused', 'unused')) enqueueVolume(v);
  };
  nodes.addEventHandler({ onAdd: onNode, onUpdate: (_, n) => onNode(n), onDelete: onNode });
  attachments.addEventHandler({
    onAdd: (a) => {
      const v = a.spec?.source?.persistentVolumeName ? world.volume(a.spec.source.persistentVolumeName) : undefined;
      if (v) enqueueVolume(v);
    },
  });
  const onFailure = (e: Event): void => {
    const o = e.involvedObject;
    if (o?.namespace && o.name) enqueueClaimUsers(`${o.namespace}/${o.name}`);
  };
  failures.addEventHandler({ onAdd: onFailure, onUpdate: (_, e) => onFailure(e) });
  const onRecord = (r: ProvisioningRollback): void => queue.add(recordKey(objectKey(r)));
  records.addEventHandler({ onAdd: onRecord, onUpdate: (_, r) => onRecord(r) });
  return controller;
}
