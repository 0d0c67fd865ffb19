import type { KubeObject } from './object-key.js';
import type { Event, Node, PersistentVolumeClaim, Pod } from '../types/wire.js';
import { isDnsSubdomain } from '../selectors/label-syntax.js';
import {
  ANN_BETA_STORAGE_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_MIGRATED_TO,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
} from '../volumes/well-known.js';

/** Removes managedFields: the default transform, since no controller reads them and they dominate memory. */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields) obj.metadata.managedFields = undefined;
  return obj;
}

// One projection per resource for the whole process. Informers are shared between loops, so a
// loop-private projection would either conflict with another loop's (the factory refuses that) or,
// worse, hand another loop objects missing the fields it reads. Each projection is the union of
// what the loops read; add a field here when a loop needs one.

/** Nodes: labels (binding, topology segments), taints (rollback; the binder's hand-placed pods) and cordon (rollback), volumesInUse (rollback). */
export function projectNode(o: KubeObject): Node {
  const n = o as Node;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: n.metadata?.name, uid: n.metadata?.uid, resourceVersion: n.metadata?.resourceVersion, labels: n.metadata?.labels, deletionTimestamp: n.metadata?.deletionTimestamp },
    spec: { unschedulable: n.spec?.unschedulable, taints: n.spec?.taints },
    status: { volumesInUse: n.status?.volumesInUse },
  };
}

/**
 * Pods: identity (with creation time and controller), the claims they use, where they run, tolerations,
 * whether they ran (phase, container states, PodScheduled), and for pods using claims the nodeSelector
 * and required node affinity (what the kubelet checks before it runs a hand-placed pod) and the nominated node. Containers are dropped: the biggest
 * part of a pod and read by no loop. So are annotations (labels were never kept): no loop reads them, and a pod's
 * writer decides their size (up to 256 KiB of annotations per pod), cached for every pod in the cluster.
 */
type PodVolume = NonNullable<NonNullable<Pod['spec']>['volumes']>[number];

export function projectPod(o: KubeObject): Pod {
  const p = o as Pod;
  const md = p.metadata ?? {};
  // Claims only: a generic ephemeral volume's claim is named after the pod and the volume, so its
  // presence is all that is kept of it. A claimName no claim can have is not kept (claimNamesOfPod).
  const volumes = (p.spec?.volumes ?? []).flatMap((v): PodVolume[] =>
    v.persistentVolumeClaim ? (isDnsSubdomain(v.persistentVolumeClaim.claimName ?? '') ? [{ name: v.name, persistentVolumeClaim: v.persistentVolumeClaim }] : []) : v.ephemeral ? [{ name: v.name, ephemeral: {} }] : [],
  );
  const states = (list: NonNullable<Pod['status']>['containerStatuses']): NonNullable<Pod['status']>['containerStatuses'] =>
    list?.map((s) => ({ name: s.name, image: '', imageID: '', ready: s.ready, restartCount: s.restartCount, started: s.started, state: s.state, lastState: s.lastState }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: md.name,
      namespace: md.namespace,
      uid: md.uid,
      resourceVersion: md.resourceVersion,
      // When it was created and which workload made it: the rollback loop's evidence of which pod a
      // volume was provisioned for.
      creationTimestamp: md.creationTimestamp,
      ownerReferences: md.ownerReferences?.filter((o) => o.controller),
      deletionTimestamp: md.deletionTimestamp,
    },
    spec: {
      nodeName: p.spec?.nodeName,
      containers: [],
      tolerations: p.spec?.tolerations,
      volumes,
      // What the kubelet checks before it runs a pod placed with spec.nodeName (the binder's
      // placed-pod-admission.ts), only for pods that use claims; preferences are not kept.
      ...(volumes.length > 0 ? admissionSelectors(p) : {}),
    },
    status: {
      phase: p.status?.phase,
      conditions: p.status?.conditions?.filter((c) => c.type === 'PodScheduled'),
      containerStatuses: states(p.status?.containerStatuses),
      initContainerStatuses: states(p.status?.initContainerStatuses),
      // isPodTerminated reads them too: a debug container still running keeps the pod alive.
      ephemeralContainerStatuses: states(p.status?.ephemeralContainerStatuses),
      // Where kube-scheduler means to place it (binding it there, or preempting for it): the
      // rollback loop's reason to doubt an older Unschedulable condition. Only for pods using claims.
      ...(volumes.length > 0 && p.status?.nominatedNodeName ? { nominatedNodeName: p.status.nominatedNodeName } : {}),
    },
  };
}

/** A pod's nodeSelector and required node affinity, the rest of its affinity left out. */
function admissionSelectors(p: Pod): Pick<NonNullable<Pod['spec']>, 'nodeSelector' | 'affinity'> {
  const required = p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  return {
    ...(p.spec?.nodeSelector ? { nodeSelector: p.spec.nodeSelector } : {}),
    ...(required ? { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required } } } : {}),
  };
}

/**
 * The longest of an Event's free-form strings kept in a cache. kube-apiserver checks only that a
 * core/v1 Event's involvedObject.namespace is its own (legacyValidateEvent in
 * pkg/apis/core/validation/events.go): its involvedObject's name, uid and kind and its reason and type
 * may be as long as the object may be (about 1.5 MB in etcd). No object's name is longer than 253,
 * a uid than 36 as the API server makes them, a kind or a reason (events.k8s.io/v1 allows 128) than
 * this, so a longer value is about nothing the loops look for, and is dropped.
 */
export const EVENT_FIELD_KEPT = 253;

const kept = (s: string | undefined): string | undefined => (s === undefined || s.length <= EVENT_FIELD_KEPT ? s : undefined);

/**
 * Who an Event is about, why, and when it last happened (its timestamps as every kind of recorder
 * writes them): what the binder's stale-selected-node check reads of the provisioner's Events. An
 * Event anyone who may create Events in a namespace writes, cached cluster-wide (kube-controller-manager
 * and external-provisioner cache none): no string longer than EVENT_FIELD_KEPT is kept.
 */
export function slimEvent(o: KubeObject): Event {
  const e = o as Event;
  const md = e.metadata ?? {};
  const io = e.involvedObject;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: md.name, namespace: md.namespace, resourceVersion: md.resourceVersion, uid: md.uid },
    // The object's resourceVersion as the recorder had it: which copy of a claim a failure is
    // about (the rollback loop's SelectionVersions).
    involvedObject: { kind: kept(io?.kind), namespace: kept(io?.namespace), name: kept(io?.name), uid: kept(io?.uid), ...(io?.resourceVersion !== undefined ? { resourceVersion: kept(io.resourceVersion) } : {}) },
    reason: kept(e.reason),
    firstTimestamp: e.firstTimestamp,
    lastTimestamp: e.lastTimestamp,
    eventTime: e.eventTime,
    series: e.series ? { count: e.series.count, lastObservedTime: e.series.lastObservedTime } : undefined,
  };
}

/**
 * `s` cut to `n` characters and ending in "…", as a string of its own. V8 makes a slice of a long
 * string point into it (a sliced string), so a slice kept in a cache would keep the whole value
 * alive: the copy through a Buffer is what lets it go.
 */
export function cutValue(s: string, n: number): string {
  return Buffer.from(`${s.slice(0, n)}…`, 'utf8').toString('utf8');
}

/** The longest Event message kept in a cache; the API server sets no limit on core/v1 Events. */
export const EVENT_MESSAGE_KEPT = 1024;

/**
 * slimEvent, with the type, count and a message to quote: what the rollback and capacity loops read
 * of ProvisioningFailed Events. No labels, no annotations, no more than EVENT_MESSAGE_KEPT of the
 * message: anyone who may create Events in a namespace decides their size, and the loops cache them
 * cluster-wide (kube-controller-manager and external-provisioner cache none), so whole Events would
 * let one tenant fill the process's memory.
 */
export function projectEvent(o: KubeObject): Event {
  const e = o as Event;
  const message = e.message === undefined || e.message.length <= EVENT_MESSAGE_KEPT ? e.message : cutValue(e.message, EVENT_MESSAGE_KEPT);
  return { ...slimEvent(e), type: kept(e.type), message, count: e.count };
}

/** The claim annotations the loops read: binding, class, selected node, provisioner and migration. */
export const CLAIM_ANNOTATIONS_KEPT: readonly string[] = [
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_BETA_STORAGE_CLASS,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_MIGRATED_TO,
];

/**
 * The longest kept claim annotation value. Each names a node, a class or a provisioner (a qualified
 * name: at most 253 + 1 + 63 characters) or is a mark read for its presence; a longer one is cut
 * here and ends in "…", so it still names nothing and is still there.
 */
export const CLAIM_ANNOTATION_VALUE_KEPT = 512;

/**
 * The largest claim label selector kept, as JSON (about 20 labels; a parsed selector takes some six
 * times its JSON in the heap). A selector is bounded only by the object (about 1.5 MB). A larger one
 * is cached as a selector that matches no volume (the label-selector evaluator matches nothing for
 * an operator it does not know), so the claim is left to its class's provisioner, as one no volume
 * matches is.
 */
export const CLAIM_SELECTOR_KEPT = 2048;

/** What a claim's spec.selector is cached as when it is larger than CLAIM_SELECTOR_KEPT (shared by every such claim: frozen). */
export const SELECTOR_TOO_LARGE: Readonly<{ matchExpressions: readonly Readonly<{ key: string; operator: string }>[] }> = Object.freeze({
  matchExpressions: Object.freeze([Object.freeze({ key: 'topovol.io/selector-too-large-to-cache', operator: 'TooLargeToCache' })]),
});

/** Whether a cached claim's selector is SELECTOR_TOO_LARGE (by its content: copies compare equal too). */
export function selectorTooLargeToCache(selector: { matchExpressions?: readonly { operator?: string }[] } | null | undefined): boolean {
  return selector?.matchExpressions?.some((e) => e.operator === SELECTOR_TOO_LARGE.matchExpressions[0]!.operator) === true;
}

/**
 * The longest name kept from a claim's spec (volumeName, a data source's kind and name): the API
 * server checks neither's length, and no object's name is longer (DNS subdomain, 253), so a longer
 * one is cut (CLAIM_ANNOTATION_VALUE_KEPT's way) and still names nothing.
 */
export const CLAIM_NAME_KEPT = 253;

// Whatever the JSON holds (the server writes null for some unset fields): only a long string is cut.
const keptName = <T>(s: T): T => (typeof s === 'string' && s.length > CLAIM_NAME_KEPT ? (cutValue(s, CLAIM_NAME_KEPT) as T) : s);

type DataSource = NonNullable<NonNullable<PersistentVolumeClaim['spec']>['dataSourceRef']>;

/** A data source's group, kind, name and namespace, the free-form ones cut: presence, kind and name are what the rollback reads. */
function keptSource<T extends DataSource | undefined>(d: T): T {
  if (!d) return d;
  return { apiGroup: keptName(d.apiGroup), kind: keptName(d.kind), name: keptName(d.name), ...(d.namespace !== undefined ? { namespace: keptName(d.namespace) } : {}) } as T;
}

/**
 * Claims: identity and deletion, the annotations in CLAIM_ANNOTATIONS_KEPT (each value at most
 * CLAIM_ANNOTATION_VALUE_KEPT), what binding matches on (class, access modes without repeats, the
 * storage request, volume mode, selector, attributes class, the volume's name and the data
 * source's, each at most CLAIM_NAME_KEPT) and the status the binder writes (phase, access modes,
 * capacity, current attributes class). Labels, owner references,
 * finalizers, other annotations, limits and other status fields are dropped: whoever creates a claim
 * decides their size (kube-apiserver bounds labels only by the object's 1.5 MB), and every claim in
 * the cluster is cached. Nothing is written from this copy: the binder writes claims by merge patch
 * with the resourceVersion, and the rollback reads the claims it records from the server.
 */
export function projectClaim(o: KubeObject): PersistentVolumeClaim {
  const c = o as PersistentVolumeClaim;
  const md = c.metadata ?? {};
  const spec = c.spec ?? {};
  const st = c.status;
  const annotations = keptAnnotations(md.annotations);
  const storage = spec.resources?.requests?.storage;
  const selector = spec.selector && (JSON.stringify(spec.selector) ?? '').length > CLAIM_SELECTOR_KEPT ? (SELECTOR_TOO_LARGE as NonNullable<typeof spec.selector>) : spec.selector;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: md.name,
      namespace: md.namespace,
      uid: md.uid,
      resourceVersion: md.resourceVersion,
      creationTimestamp: md.creationTimestamp,
      deletionTimestamp: md.deletionTimestamp,
      deletionGracePeriodSeconds: md.deletionGracePeriodSeconds,
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      accessModes: Array.isArray(spec.accessModes) ? [...new Set(spec.accessModes)] : spec.accessModes,
      resources: storage !== undefined ? { requests: { storage } } : spec.resources && {},
      selector,
      storageClassName: spec.storageClassName,
      volumeName: keptName(spec.volumeName),
      volumeMode: spec.volumeMode,
      volumeAttributesClassName: spec.volumeAttributesClassName,
      dataSource: keptSource(spec.dataSource),
      dataSourceRef: keptSource(spec.dataSourceRef),
    },
    ...(st ? { status: { phase: st.phase, accessModes: st.accessModes, capacity: st.capacity, currentVolumeAttributesClassName: st.currentVolumeAttributesClassName } } : {}),
  };
}

function keptAnnotations(all: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!all) return undefined;
  let kept: Record<string, string> | undefined;
  for (const k of CLAIM_ANNOTATIONS_KEPT) {
    const v = all[k];
    if (v === undefined) continue;
    kept ??= {};
    kept[k] = typeof v === 'string' && v.length > CLAIM_ANNOTATION_VALUE_KEPT ? cutValue(v, CLAIM_ANNOTATION_VALUE_KEPT) : v;
  }
  return kept;
}
