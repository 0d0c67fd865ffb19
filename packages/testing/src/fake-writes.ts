import { isDeepStrictEqual } from 'node:util';
import { KubeApiError } from '@topovol/shared';
import type { DeleteOptions, EventRecorder, EventType, KubeClient, KubeObject, PatchOptions, PatchType, ResourceType } from '@topovol/shared';

/**
 * An in-memory API server for the writes an actuator makes: objects by resource, namespace and
 * name; every write that changes the object bumps the resourceVersion (one that changes nothing is
 * not stored and keeps it, as kube-apiserver's GuaranteedUpdate), and a write whose precondition (resourceVersion,
 * uid) does not hold is refused with 409 Conflict and changes nothing, as the real one does
 * (k8s.io/apiserver/pkg/registry/generic/registry/store.go). Only merge patches are understood.
 * A delete removes the object at once (no finalizers).
 */
export class FakeWrites implements Pick<KubeClient, 'create' | 'replace' | 'replaceStatus' | 'patch' | 'delete'> {
  private readonly objects = new Map<string, KubeObject>();
  private rv = 100;
  private uids = 0;

  /** Puts an object in the store as it is (resourceVersion and uid set when missing), and returns a copy. */
  seed<T extends KubeObject>(r: ResourceType, obj: T): T {
    const o = wire(obj);
    o.metadata = { ...o.metadata, resourceVersion: o.metadata?.resourceVersion ?? this.nextRv(), uid: o.metadata?.uid ?? this.nextUid() };
    this.objects.set(key(r, o.metadata.name, o.metadata.namespace), o);
    return structuredClone(o);
  }

  /** The stored object (a copy), or undefined. */
  stored<T extends KubeObject>(r: ResourceType, name: string, namespace?: string): T | undefined {
    const o = this.objects.get(key(r, name, namespace));
    return o && (structuredClone(o) as T);
  }

  /** Everything stored, for comparing the whole store before and after. */
  snapshot(): Record<string, KubeObject> {
    return structuredClone(Object.fromEntries(this.objects));
  }

  create<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> {
    const k = key(r, obj.metadata?.name, obj.metadata?.namespace);
    if (this.objects.has(k)) return refuse(409, 'AlreadyExists', `${r.plural} "${obj.metadata?.name}" already exists`);
    const o = wire(obj);
    o.metadata = { ...o.metadata, resourceVersion: this.nextRv(), uid: this.nextUid() };
    this.objects.set(k, o);
    return Promise.resolve(structuredClone(o));
  }

  /** PUT: the main resource leaves status alone; the status subresource, see `statusWrite`. */
  replace<T extends KubeObject>(r: ResourceType, obj: T, opts: { subresource?: 'status' } = {}): Promise<T> {
    const md = obj.metadata ?? {};
    const k = key(r, md.name, md.namespace);
    const cur = this.objects.get(k) as (T & { status?: unknown }) | undefined;
    if (!cur) return notFound(r, md.name);
    const stale = this.precondition(cur, md.uid, md.resourceVersion);
    if (stale) return stale;
    const sent = wire(obj) as T & { status?: unknown };
    return Promise.resolve(this.store(k, opts.subresource === 'status' ? statusWrite(r, cur, sent) : mainWrite(cur, sent), cur));
  }

  replaceStatus<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> {
    return this.replace(r, obj, { subresource: 'status' });
  }

  patch<T extends KubeObject>(r: ResourceType, name: string, namespace: string | undefined, type: PatchType, patch: unknown, opts: PatchOptions = {}): Promise<T> {
    if (type !== 'merge') throw new Error(`FakeWrites: only merge patches (got ${type})`);
    const k = key(r, name, namespace);
    const cur = this.objects.get(k) as (T & { status?: unknown }) | undefined;
    if (!cur) return notFound(r, name);
    const md = (patch as KubeObject).metadata;
    const stale = this.precondition(cur, md?.uid, md?.resourceVersion);
    if (stale) return stale;
    const merged = mergePatch(cur, wire(patch)) as T & { status?: unknown };
    // As a PUT of the patched object.
    return Promise.resolve(this.store(k, opts.subresource === 'status' ? statusWrite(r, cur, merged) : mainWrite(cur, merged), cur));
  }

  delete(r: ResourceType, name: string, namespace?: string, opts: DeleteOptions = {}): Promise<void> {
    const k = key(r, name, namespace);
    const cur = this.objects.get(k);
    if (!cur) return notFound(r, name);
    const stale = this.precondition(cur, opts.preconditions?.uid, opts.preconditions?.resourceVersion);
    if (stale) return stale;
    this.objects.delete(k);
    return Promise.resolve();
  }

  private precondition(cur: KubeObject, uid: string | undefined, resourceVersion: string | undefined): Promise<never> | undefined {
    if (uid !== undefined && uid !== cur.metadata?.uid) return refuse(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${cur.metadata?.uid}`);
    if (resourceVersion !== undefined && resourceVersion !== cur.metadata?.resourceVersion) {
      return refuse(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again');
    }
    return undefined;
  }

  private store<T extends KubeObject>(k: string, next: T, cur: T): T {
    // Identity is the server's: uid and name stay; resourceVersion is the next one, unless nothing
    // changed: kube-apiserver then stores nothing and answers with the object as it was
    // (k8s.io/apiserver/pkg/storage/etcd3/store.go, GuaranteedUpdate), a trap for a write meant
    // only to move the resourceVersion.
    next.metadata = { ...next.metadata, uid: cur.metadata?.uid, resourceVersion: cur.metadata?.resourceVersion };
    if (isDeepStrictEqual(wire(next), cur)) return structuredClone(cur);
    next.metadata.resourceVersion = this.nextRv();
    this.objects.set(k, next);
    return structuredClone(next);
  }

  private nextRv(): string {
    return String(++this.rv);
  }

  private nextUid(): string {
    return `uid-${++this.uids}`;
  }
}

/** An Event as recorded: its target and what it says. */
export interface RecordedEvent {
  kind?: string;
  name?: string;
  type: EventType;
  reason: string;
  message: string;
}

/** Keeps Events in memory. */
export class FakeEvents implements Pick<EventRecorder, 'event' | 'flush'> {
  readonly recorded: RecordedEvent[] = [];
  /** What `flush` waits for: set it to hold the caller as a slow API server would. */
  pending: Promise<void> = Promise.resolve();
  event(obj: KubeObject, type: EventType, reason: string, message: string): boolean {
    this.recorded.push({ kind: obj.kind, name: obj.metadata?.name, type, reason, message });
    return true;
  }
  flush(): Promise<void> {
    return this.pending;
  }
}

type WithStatus = KubeObject & { status?: unknown; spec?: unknown };

/** A write of the main resource: everything but status, which stays the stored one. */
function mainWrite<T extends WithStatus>(cur: T, sent: T): T {
  const next: T = { ...sent, status: structuredClone(cur.status) };
  if (next.status === undefined) delete next.status;
  return next;
}

/**
 * A write of the status subresource. For volumes and claims (their status strategies in
 * pkg/registry/core) only spec is reset: metadata sent with the status is stored, so a status PUT
 * of a cached copy missing labels or finalizers loses them, as on the real server. For anything
 * else, everything but status is (as apiextensions-apiserver's status strategy for custom resources).
 */
const METADATA_FROM_STATUS_WRITES = new Set(['persistentvolumes', 'persistentvolumeclaims']);

function statusWrite<T extends WithStatus>(r: ResourceType, cur: T, sent: T): T {
  const next: T = r.group === '' && METADATA_FROM_STATUS_WRITES.has(r.plural) ? { ...sent, spec: structuredClone(cur.spec) } : { ...structuredClone(cur), status: sent.status };
  if (next.spec === undefined) delete next.spec;
  if (next.status === undefined) delete next.status;
  return next;
}

/** What the server receives: the JSON of what was sent (undefined fields are not sent). */
const wire = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

const key = (r: ResourceType, name?: string, namespace?: string): string => `${r.group}/${r.plural}/${namespace ?? ''}/${name ?? ''}`;

function refuse(code: number, reason: string, message: string, details?: { name?: string; kind: string }): Promise<never> {
  return Promise.reject(KubeApiError.fromResponse(code, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, ...(details ? { details } : {}) })));
}

/** kube-apiserver's 404 for an object that is not there: its Status names the resource and the object. */
function notFound(r: ResourceType, name: string | undefined): Promise<never> {
  return refuse(404, 'NotFound', `${r.plural} "${name ?? ''}" not found`, { name, kind: r.plural });
}

/** RFC 7386 JSON merge patch: objects merge, null removes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? structuredClone(target as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = mergePatch(out[k], v);
  }
  return out;
}
