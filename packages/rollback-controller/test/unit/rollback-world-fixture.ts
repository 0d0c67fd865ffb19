import type { Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment } from '@topovol/shared';
import { claimNamesOfPod } from '@topovol/shared';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningObservation, RollbackWorld } from '../../src/rollback/rollback-world.js';
import { NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import { historyKeyOfRecord } from '../../src/rollback/workload.js';

// Cluster fixtures for the rollback loop's decisions: a world from plain lists, and builders.
export const NOW = Date.parse('2026-11-22T12:00:00Z');
const SEL = 'volume.kubernetes.io/selected-node';
export const iso = (ms: number): string => new Date(ms).toISOString();

export interface W {
  pvs?: PersistentVolume[];
  claims?: PersistentVolumeClaim[];
  pods?: Pod[];
  nodes?: Node[];
  /** Default: CLASSES. */
  classes?: StorageClass[];
  inUse?: Record<string, string[]>;
  attachments?: VolumeAttachment[];
  failures?: Record<string, Event[]>;
  /** Failures that arrived before their claim's current selected node (all others arrived after it). */
  failedBeforeSelected?: Event[];
  observed?: Record<string, ProvisioningObservation>;
  /** By claim key (ns/name): evidence left by a pod seen deleted. */
  ended?: Record<string, string>;
  rollbacks?: ProvisioningRollback[];
  /** Not part of the world: what the loop's glue passes to decideRollback. */
  stuckSince?: number;
  /** Not part of the world: the glue's readySince (NODE_STATE_DWELL_MS counts from it). */
  readySince?: number;
}

export function world(w: W): RollbackWorld {
  return {
    volume: (n) => w.pvs?.find((v) => v.metadata?.name === n),
    claim: (ns, n) => w.claims?.find((c) => c.metadata?.namespace === ns && c.metadata?.name === n),
    node: (n) => w.nodes?.find((x) => x.metadata?.name === n),
    nodes: () => w.nodes ?? [],
    storageClass: (n) => (w.classes ?? CLASSES).find((c) => c.metadata?.name === n),
    podsUsingClaim: (ns, n) => (w.pods ?? []).filter((p) => p.metadata?.namespace === ns && claimNamesOfPod(p).includes(n)),
    podExists: (uid) => (w.pods ?? []).some((p) => p.metadata?.uid === uid),
    nodesUsingVolume: (v) => Object.entries(w.inUse ?? {}).flatMap(([node, names]) => (names.includes(v.metadata?.name ?? '') ? [node] : [])),
    attachmentsOf: (n) => (w.attachments ?? []).filter((a) => a.spec?.source?.persistentVolumeName === n),
    provisioningFailures: (c) => w.failures?.[c.metadata?.name ?? ''] ?? [],
    failedSinceSelected: (_, e) => !(w.failedBeforeSelected ?? []).includes(e),
    provisioningObserved: (uid) => w.observed?.[uid],
    endedUse: (ns, n) => w.ended?.[`${ns}/${n}`],
    rollbacksOf: (key) => (w.rollbacks ?? []).filter((r) => historyKeyOfRecord(r) === key),
    rollbacksOfClaim: (ns, name) => (w.rollbacks ?? []).filter((r) => r.spec.pod.namespace === ns && r.spec.claims.some((c) => c.name === name)),
    now: () => NOW,
    graceMs: 60_000,
    nodeStateDwellMs: NODE_STATE_DWELL_MS,
    markWindowMs: 600_000,
    maxRollbacks: 3,
    backoffBaseMs: 30_000,
  };
}

/** The fixture's classes: claims are of DELAYED unless they say otherwise. */
export const DELAYED = 'local-wffc';
export const IMMEDIATE = 'net-immediate';
export const CLASSES: StorageClass[] = [
  { metadata: { name: DELAYED }, provisioner: 'csi.example.com', volumeBindingMode: 'WaitForFirstConsumer' },
  { metadata: { name: IMMEDIATE }, provisioner: 'csi.example.com', volumeBindingMode: 'Immediate' },
];

export const claim = (name: string, extra: { volume?: string; selected?: string; storageClass?: string } = {}): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '5', annotations: extra.selected ? { [SEL]: extra.selected } : {} },
  spec: { volumeName: extra.volume, storageClassName: extra.storageClass ?? DELAYED },
  status: { phase: extra.volume ? 'Bound' : 'Pending' },
});
export const pv = (name: string, claimName: string, extra: { usage?: string; forNode?: string; forPod?: string; forWorkload?: string; provisioned?: boolean; ageMs?: number } = {}): PersistentVolume => ({
  metadata: {
    name,
    creationTimestamp: iso(NOW - (extra.ageMs ?? 1000)),
    labels: extra.usage ? { 'rollback.topovol.io/usage': extra.usage } : {},
    annotations: {
      ...(extra.provisioned === false ? {} : { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' }),
      ...(extra.forNode
        ? { 'rollback.topovol.io/provisioned-for-node': extra.forNode, 'rollback.topovol.io/provisioned-for-pod': extra.forPod ?? 'uid-p', 'rollback.topovol.io/provisioned-for-workload': extra.forWorkload ?? extra.forPod ?? 'uid-p' }
        : {}),
    },
  },
  spec: { claimRef: { namespace: 'ns', name: claimName, uid: `uid-${claimName}` } },
  status: { phase: 'Bound' },
});
export type PodExtra = { nodeName?: string; phase?: string; uid?: string; tolerations?: NonNullable<Pod['spec']>['tolerations']; createdMsAgo?: number; owner?: string; ownerKind?: string; ephemeral?: string[] };
export const pod = (name: string, claims: string[], extra: PodExtra = {}): Pod => ({
  metadata: {
    name,
    namespace: 'ns',
    uid: extra.uid ?? `uid-${name}`,
    creationTimestamp: iso(NOW - (extra.createdMsAgo ?? 60_000)),
    ownerReferences: extra.owner ? [{ apiVersion: 'apps/v1', kind: extra.ownerKind ?? 'ReplicaSet', name: 'rs', uid: extra.owner, controller: true }] : undefined,
  },
  spec: {
    nodeName: extra.nodeName,
    tolerations: extra.tolerations,
    containers: [],
    volumes: [...claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })), ...(extra.ephemeral ?? []).map((v) => ({ name: v, ephemeral: {} }))],
  },
  status: { phase: extra.phase ?? 'Pending' },
});
export const node = (name: string, spec: Node['spec'] = {}): Node => ({ metadata: { name }, spec });
export const failed = (msg: string, at = NOW - 5_000): Event => ({ metadata: { name: 'e' }, involvedObject: {}, reason: 'ProvisioningFailed', message: msg, lastTimestamp: iso(at) });
/** A ProvisioningFailed Event as an events.k8s.io/v1 recorder writes it: eventTime (microseconds) and, once repeated, a series. */
export const seriesFailed = (msg: string, first: number, last?: number): Event => {
  const micro = (ms: number): string => iso(ms).replace('Z', '000Z');
  return { metadata: { name: 'e' }, involvedObject: {}, reason: 'ProvisioningFailed', message: msg, eventTime: micro(first), ...(last === undefined ? {} : { series: { count: 2, lastObservedTime: micro(last) } }) };
};
export const seen = (podUid = 'uid-p', node = 'a', workloadUid = podUid): ProvisioningObservation => ({ node, podUid, workloadUid });
export const record = (workloadUid: string, attempt: number, createdAt: number, at: { namespace?: string; pod?: string; kind?: string } = {}): ProvisioningRollback => ({
  metadata: { name: `${workloadUid}-${attempt}`, creationTimestamp: iso(createdAt) },
  spec: { pod: { namespace: at.namespace ?? 'ns', name: at.pod ?? 'p', uid: 'uid-p' }, workload: { kind: at.kind ?? 'Pod', name: 'p', uid: workloadUid }, node: 'a', reason: 'x', attempt, evidenceTime: iso(createdAt - 1000), claims: [] },
  status: { phase: 'Completed' },
});
