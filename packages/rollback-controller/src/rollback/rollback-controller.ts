import { claimKeysOfPod, Controller, objectKey, POD_CLAIM_INDEX, projectNode, projectPod, Resources, splitKey } from '@topovol/shared';
import type { ControllerEnv, Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from '@topovol/shared';
import { RollbackActuator } from './actuator.js';
import { decideMark } from './decide-mark.js';
import { decideRollback } from './decide-rollback.js';
import { ANN_PROVISIONED_FOR_NODE, ANN_RECREATE_CLAIMS, usageOf } from './marks.js';
import { GRACE_FLAG, MARK_WINDOW_FLAG } from './rollback-flags.js';
import type { RollbackWorld } from './rollback-world.js';
import { volumesInUseMentions } from './usage-evidence.js';

const POD = 'pod/';
const PV = 'pv/';

function numberFlag(v: unknown, fallback: number): number {
  return typeof v === 'number' ? v : fallback;
}

/** The rollback loop (kubernetes #94217): marks volumes on pv/ keys, rolls back stuck pods on pod/ keys. */
export function setupRollback(env: ControllerEnv): Controller {
  const { informers, client, events, options, log } = env;
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const pvcs = informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims);
  const pods = informers.forResource<Pod>(Resources.pods, { transform: projectPod });
  const nodes = informers.forResource<Node>(Resources.nodes, { transform: projectNode });
  const attachments = informers.forResource<VolumeAttachment>(Resources.volumeAttachments);
  const failures = informers.forResource<Event>(Resources.events, { fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed' });

  pods.addIndex(POD_CLAIM_INDEX, claimKeysOfPod);
  pvs.addIndex('claim', (v) => (v.spec?.claimRef?.name ? [`${v.spec.claimRef.namespace}/${v.spec.claimRef.name}`] : []));
  pvs.addIndex('forNode', (v) => {
    const n = v.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE];
    return n ? [n] : [];
  });
  pvs.addIndex('unused', (v) => (usageOf(v) === 'unused' ? ['unused'] : []));
  attachments.addIndex('pv', (a) => (a.spec?.source?.persistentVolumeName ? [a.spec.source.persistentVolumeName] : []));
  failures.addIndex('claimUid', (e) => (e.involvedObject?.uid ? [e.involvedObject.uid] : []));

  const stuck = new Map<string, number>();
  // --dry-run: the marks we would have written, laid over the cache so that the rollback decisions
  // reported are the ones a real run would make.
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
    nodesUsingVolume: (v) => nodes.cache.list().flatMap((n) => ((n.status?.volumesInUse ?? []).some((e) => volumesInUseMentions(e, v)) ? [n.metadata?.name ?? ''] : [])),
    attachmentsOf: (name) => attachments.cache.byIndex('pv', name),
    provisioningFailures: (c) => failures.cache.byIndex('claimUid', c.metadata?.uid ?? ''),
    now: () => Date.now(),
    graceMs: numberFlag(options.extra[GRACE_FLAG], 2 * 60_000),
    markWindowMs: numberFlag(options.extra[MARK_WINDOW_FLAG], 10 * 60_000),
    stuckSince: (key) => {
      let t = stuck.get(key);
      if (t === undefined) stuck.set(key, (t = Date.now()));
      return t;
    },
  };
  const actuator = new RollbackActuator({
    client,
    events,
    log,
    dryRun: options.dryRun,
    rememberDryRunMark: (name, labels, annotations) => {
      dryMarks.set(name, { labels, annotations });
      const v = pvs.cache.get(name);
      if (v) onVolume(v);
    },
  });

  const controller = new Controller(
    'rollback',
    async (_ctx, key) => {
      if (key.startsWith(PV)) {
        const v = world.volume(key.slice(PV.length));
        if (v) await actuator.mark(decideMark(v, world));
        return undefined;
      }
      const { namespace, name } = splitKey(key.slice(POD.length));
      const pod = pods.cache.get(`${namespace}/${name}`);
      if (!pod) {
        stuck.delete(`${namespace}/${name}`);
        return undefined;
      }
      if (pod.metadata?.annotations?.[ANN_RECREATE_CLAIMS]) return actuator.recreate(pod);
      const decision = decideRollback(pod, world);
      if (decision.kind === 'none') stuck.delete(`${namespace}/${name}`);
      return actuator.rollback(pod, decision);
    },
    { workers: options.concurrentWorkers },
  );

  const enqueuePod = (p: Pod): void => controller.enqueue(POD + objectKey(p));
  const enqueueVolume = (v: PersistentVolume): void => controller.enqueue(PV + objectKey(v));
  const enqueueClaimUsers = (claimKey: string): void => {
    for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, claimKey)) enqueuePod(p);
    for (const v of pvs.cache.byIndex('claim', claimKey)) enqueueVolume(v);
  };
  const onPod = (p: Pod): void => {
    enqueuePod(p);
    for (const k of claimKeysOfPod(p)) for (const v of pvs.cache.byIndex('claim', k)) enqueueVolume(v);
  };
  pods.addEventHandler({ onAdd: onPod, onUpdate: (_, p) => onPod(p), onDelete: onPod });
  const onVolume = (v: PersistentVolume): void => {
    enqueueVolume(v);
    const ref = v.spec?.claimRef;
    if (ref?.name) for (const p of pods.cache.byIndex(POD_CLAIM_INDEX, `${ref.namespace}/${ref.name}`)) enqueuePod(p);
  };
  pvs.addEventHandler({ onAdd: onVolume, onUpdate: (_, v) => onVolume(v) });
  pvcs.addEventHandler({ onAdd: (c) => enqueueClaimUsers(objectKey(c)), onUpdate: (_, c) => enqueueClaimUsers(objectKey(c)), onDelete: (c) => enqueueClaimUsers(objectKey(c)) });
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
  return controller;
}
