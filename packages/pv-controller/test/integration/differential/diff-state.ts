import type { Event, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';

/** The annotations the binder (upstream's or ours) and the provisioning protocol write. */
export const COMPARED_ANNOTATIONS = [
  'pv.kubernetes.io/bind-completed',
  'pv.kubernetes.io/bound-by-controller',
  'pv.kubernetes.io/provisioned-by',
  'volume.kubernetes.io/selected-node',
  'volume.kubernetes.io/storage-provisioner',
  'volume.beta.kubernetes.io/storage-provisioner',
  'pv.kubernetes.io/migrated-to',
] as const;

/** A label and an annotation every scenario claim is created with, which no binder reads or writes. */
export const CLAIM_LABEL = 'example.com/claim';
export const CLAIM_NOTE = 'example.com/note';

/** How a claimRef to the scenario's own namespace is shown (the namespace name itself is per run). */
export const SCENARIO_NAMESPACE = '(scenario)';

/** The Event source both binders report as (kube-controller-manager's, and ours on purpose). */
export const BINDER_COMPONENT = 'persistentvolume-controller';

export interface ClaimState {
  phase?: string;
  volumeName?: string;
  /** null: unset (nil), as distinct from "". */
  storageClassName: string | null;
  annotations: Record<string, string>;
  /** What no binder reads: kept by both as the claim's writer left it. */
  labels: Record<string, string>;
  otherAnnotations: Record<string, string>;
  /** Sorted. */
  finalizers: string[];
  capacity?: string;
  accessModes?: string[];
  currentVolumeAttributesClassName?: string;
  terminating: boolean;
  /** Reasons of the binder's Events on the claim, sorted, each once. */
  events: string[];
  /** The same Events as "Reason Type: message" (messagesFor). */
  eventMessages: string[];
  /** wholeObject. */
  object: unknown;
}

export interface VolumeState {
  phase?: string;
  /** Whom the volume points at, and whether the uid is that of the claim now under that name. */
  claimRef: { namespace?: string; name?: string; uid: 'current claim' | 'another claim' | 'none' } | null;
  annotations: Record<string, string>;
  /** Sorted; the protection and CSI-migration finalizers are part of what the binders keep. */
  finalizers: string[];
  terminating: boolean;
  events: string[];
  eventMessages: string[];
  object: unknown;
  /** status.message (a Failed volume's: the Event's message), with the scenario's prefix removed from names. */
  message?: string;
}

export interface PodState {
  nodeName?: string;
}

/** A scenario's normalised end state: everything in it that cannot differ between two clusters except through the binder. */
export interface ScenarioState {
  claims: Record<string, ClaimState>;
  volumes: Record<string, VolumeState>;
  pods: Record<string, PodState>;
}

/** One side's objects, as listed from its API server. */
export interface ClusterView {
  claims: PersistentVolumeClaim[];
  volumes: PersistentVolume[];
  pods: Pod[];
  events: Event[];
}

const pick = (ann: Record<string, string> | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const k of COMPARED_ANNOTATIONS) if (ann?.[k] !== undefined) out[k] = ann[k];
  return out;
};

const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** A volume external-provisioner made for a claim (pvc-<claim uid>) is shown as this (no object can have that name). */
export const provisionedFor = (claim: string | undefined): string => `(provisioned for ${claim})`;

/**
 * The whole object as stored, less what the API server sets differently on every cluster (uids,
 * resourceVersions, times, managedFields): so a field either binder writes that the fields above
 * do not name still shows up. A claimRef's uid and resourceVersion, and the phase transition
 * time, read only as present or absent.
 */
function wholeObject(o: PersistentVolume | PersistentVolumeClaim, uids: (text: string) => string): unknown {
  const c = structuredClone(o) as PersistentVolume & PersistentVolumeClaim;
  if (c.metadata) {
    for (const k of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generation', 'deletionTimestamp', 'selfLink'] as const) delete c.metadata[k];
  }
  const ref = c.spec?.claimRef;
  if (ref) {
    if (ref.uid) ref.uid = '(set)';
    if (ref.resourceVersion) ref.resourceVersion = '(set)';
  }
  if (c.status?.lastPhaseTransitionTime) c.status.lastPhaseTransitionTime = '(set)';
  // Claim conditions (e.g. kube-controller-manager's Unused) carry their times.
  for (const cond of (c.status?.conditions ?? []) as { lastTransitionTime?: string | null; lastProbeTime?: string | null }[]) {
    if (cond.lastTransitionTime) cond.lastTransitionTime = '(set)';
    if (cond.lastProbeTime) cond.lastProbeTime = '(set)';
  }
  // external-provisioner names its instance "<start time in ms>-<random>-<driver>" in each volume it makes.
  const attrs = c.spec?.csi?.volumeAttributes;
  const identity = 'storage.kubernetes.io/csiProvisionerIdentity';
  if (attrs?.[identity]) attrs[identity] = attrs[identity].replace(/^\d+-\d+-/, '<instance>-');
  // A provisioned volume's name and handle carry uids (pvc-<claim uid>, the driver's id).
  return JSON.parse(uids(JSON.stringify(c))) as unknown;
}

function binderEvents(events: Event[], kind: string, namespace: string, name: string): Event[] {
  return events
    .filter((e) => (e.source?.component ?? e.reportingComponent) === BINDER_COMPONENT)
    .filter((e) => e.involvedObject?.name === name && (e.involvedObject.namespace ?? '') === namespace && (e.involvedObject.kind ?? kind) === kind);
}

function reasonsFor(events: Event[], kind: string, namespace: string, name: string): string[] {
  return [...new Set(binderEvents(events, kind, namespace, name).map((e) => e.reason ?? ''))].sort();
}

/**
 * "Reason Type: message [source, reporting component and instance, action, related, involved
 * object]" of each of the binder's Events on the object, each once, sorted: what `kubectl describe` shows. Names lose the scenario's prefix (the same on both sides anyway) and
 * uids, which differ between the two clusters, are normalised by `uids`.
 */
function messagesFor(events: Event[], kind: string, namespace: string, name: string, prefix: string, uids: (text: string) => string): string[] {
  // Who it says it is from, as `kubectl describe` and event pipelines read it, and what it names.
  const from = (e: Event): string => JSON.stringify([e.source, e.reportingComponent, e.reportingInstance, e.action, e.related, { ...e.involvedObject, uid: !!e.involvedObject?.uid, resourceVersion: !!e.involvedObject?.resourceVersion }]);
  const text = (e: Event): string => `${e.reason ?? ''} ${e.type ?? ''}: ${uids((e.message ?? '').split(prefix).join(''))} ${from(e)}`;
  return [...new Set(binderEvents(events, kind, namespace, name).map(text))].sort();
}

/**
 * The state of one scenario: the claims and pods of its namespace and the volumes whose names
 * start with its prefix. Uids differ between clusters, so a claimRef's uid is reduced to whether it
 * is the uid of the claim now bearing that name. Cluster-scoped names (volumes, nodes) are shown
 * without the scenario's prefix.
 */
export function scenarioState(view: ClusterView, namespace: string, prefix: string): ScenarioState {
  const uidOf = new Map<string, string>();
  for (const c of view.claims) if (c.metadata?.namespace === namespace) uidOf.set(c.metadata.name ?? '', c.metadata.uid ?? '');
  // A uid of a claim of the scenario reads as which claim it is; any other (a deleted claim's, a
  // driver's volume id) as <uid>: uids differ between the two clusters.
  const claimOfUid = new Map([...uidOf].map(([name, uid]) => [uid, name]));
  const uids = (text: string): string => text.replace(UID, (u) => (claimOfUid.has(u) ? `<uid of claim ${claimOfUid.get(u)}>` : '<uid>'));
  // Volumes external-provisioner made for this scenario's claims are named pvc-<claim uid>: keyed
  // by the claim's name, from the claims there now and from the claimRefs of provisioned volumes.
  const provisioned = new Map<string, string>();
  const provision = (volume: string, claim: string): void => {
    const token = provisionedFor(claim);
    const other = [...provisioned].find(([v, t]) => t === token && v !== volume);
    if (other) throw new Error(`${namespace}: volumes ${other[0]} and ${volume} are both provisioned for claim ${claim}: the state cannot tell them apart`);
    provisioned.set(volume, token);
  };
  for (const [name, uid] of uidOf) if (uid && view.volumes.some((v) => v.metadata?.name === `pvc-${uid}`)) provision(`pvc-${uid}`, name);
  for (const v of view.volumes) {
    const ref = v.spec?.claimRef;
    if (ref?.namespace === namespace && ref.uid && v.metadata?.name === `pvc-${ref.uid}` && v.metadata.annotations?.['pv.kubernetes.io/provisioned-by']) provision(v.metadata.name, ref.name ?? '');
  }
  const short = (n: string | undefined): string | undefined => (n && provisioned.has(n) ? provisioned.get(n) : n?.startsWith(prefix) ? n.slice(prefix.length) : n ? uids(n) : undefined);
  const pickShort = (ann: Record<string, string> | undefined): Record<string, string> => {
    const out = pick(ann);
    const sel = 'volume.kubernetes.io/selected-node';
    if (out[sel] !== undefined) out[sel] = short(out[sel]) ?? '';
    return out;
  };
  const claims: Record<string, ClaimState> = {};
  for (const c of view.claims) {
    if (c.metadata?.namespace !== namespace) continue;
    const name = c.metadata.name ?? '';
    claims[name] = {
      phase: c.status?.phase,
      volumeName: short(c.spec?.volumeName),
      storageClassName: c.spec?.storageClassName ?? null,
      annotations: pickShort(c.metadata.annotations),
      labels: { ...c.metadata.labels },
      otherAnnotations: Object.fromEntries(Object.entries(c.metadata.annotations ?? {}).filter(([k]) => !(COMPARED_ANNOTATIONS as readonly string[]).includes(k))),
      finalizers: [...(c.metadata.finalizers ?? [])].sort(),
      capacity: c.status?.capacity?.storage,
      accessModes: c.status?.accessModes?.length ? [...c.status.accessModes] : undefined,
      currentVolumeAttributesClassName: c.status?.currentVolumeAttributesClassName ?? undefined,
      terminating: !!c.metadata.deletionTimestamp,
      events: reasonsFor(view.events, 'PersistentVolumeClaim', namespace, name),
      eventMessages: messagesFor(view.events, 'PersistentVolumeClaim', namespace, name, prefix, uids),
      object: wholeObject(c, uids),
    };
  }
  const volumes: Record<string, VolumeState> = {};
  for (const v of view.volumes) {
    const name = v.metadata?.name ?? '';
    if (!name.startsWith(prefix) && !provisioned.has(name)) continue;
    const ref = v.spec?.claimRef;
    volumes[short(name)!] = {
      phase: v.status?.phase,
      claimRef: ref
        ? {
            namespace: ref.namespace === namespace ? SCENARIO_NAMESPACE : ref.namespace,
            name: ref.name,
            uid: !ref.uid ? 'none' : ref.namespace === namespace && uidOf.get(ref.name ?? '') === ref.uid ? 'current claim' : 'another claim',
          }
        : null,
      annotations: pick(v.metadata?.annotations),
      finalizers: [...(v.metadata?.finalizers ?? [])].sort(),
      terminating: !!v.metadata?.deletionTimestamp,
      events: reasonsFor(view.events, 'PersistentVolume', '', name),
      eventMessages: messagesFor(view.events, 'PersistentVolume', '', name, prefix, uids),
      object: wholeObject(v, uids),
      message: v.status?.message ? uids(v.status.message.split(prefix).join('')) : undefined,
    };
  }
  const pods: Record<string, PodState> = {};
  for (const p of view.pods) if (p.metadata?.namespace === namespace) pods[p.metadata.name ?? ''] = { nodeName: short(p.spec?.nodeName) };
  return { claims, volumes, pods };
}

/** Every leaf that differs, as "path: upstream → topovol" lines; empty when the states are equal. */
export function stateDiff(upstream: unknown, topovol: unknown, path = ''): string[] {
  if (JSON.stringify(upstream) === JSON.stringify(topovol)) return [];
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (isObj(upstream) && isObj(topovol)) {
    const keys = [...new Set([...Object.keys(upstream), ...Object.keys(topovol)])].sort();
    return keys.flatMap((k) => stateDiff(upstream[k], topovol[k], path ? `${path}.${k}` : k));
  }
  const show = (x: unknown): string => (x === undefined ? '(absent)' : JSON.stringify(x));
  return [`${path}: ${show(upstream)} → ${show(topovol)}`];
}
