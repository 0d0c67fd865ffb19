import { IndexedCache, KubeApiError, logger } from '@topovol/shared';
import type { CSINode, CSIStorageCapacity, Event, EventHandler, IndexFunc, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, ReconcileContext, ResourceType, Result, StorageClass } from '@topovol/shared';
import { capacityKeyString } from '../../src/capacity-key.js';
import type { CapacityKey } from '../../src/capacity-key.js';
import type { CapacityInformers, CapacityLoopClient, CapacityQueue, InformerView } from '../../src/capacity-loop-deps.js';
import type { MeasuredCapacity } from '../../src/objects/capacity-object.js';
import type { Segment } from '../../src/segments/segment.js';
import type { CapacityMeter } from '../../src/source/get-capacity.js';

/**
 * In-memory stand-ins for what the capacity loop and its actuator take (capacity-loop-deps.ts,
 * objects/object-actuator.ts): enough API-server behaviour to check end states without a server.
 */

const apiError = (code: number, reason: string, message: string): KubeApiError => KubeApiError.fromResponse(code, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }));

/**
 * Objects by resource and name, as an API server keeps them: a create gets a name (generateName),
 * a uid and resourceVersion 1; every write bumps the resourceVersion; a replace or delete whose
 * resourceVersion (or uid) precondition is stale is refused with 409 Conflict.
 */
export class FakeObjectStore implements CapacityLoopClient {
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private nextVersion = 1;
  private nextId = 1;
  /** Set: objects written without a creationTimestamp get one from this clock (seconds, as the API server's). */
  clock?: () => number;
  private readonly watchers = new Map<string, FakeInformer<KubeObject>>();

  /** Shows this resource's writes to an informer, a moment later, as a watch does. */
  watch<T extends KubeObject>(r: ResourceType, informer: FakeInformer<T>): void {
    this.watchers.set(r.plural, informer as unknown as FakeInformer<KubeObject>);
  }

  /** The objects of one resource, by name (copies). */
  list<T extends KubeObject>(r: ResourceType): T[] {
    return [...(this.objects.get(r.plural)?.values() ?? [])].map((o) => structuredClone(o) as T);
  }

  /** Puts an object in place as if someone else had written it. */
  seed<T extends KubeObject>(r: ResourceType, obj: T): T {
    const name = obj.metadata?.name ?? `${obj.metadata?.generateName ?? 'obj-'}${this.nextId++}`;
    const created = obj.metadata?.creationTimestamp ?? (this.clock ? new Date(Math.floor(this.clock() / 1000) * 1000).toISOString().replace('.000Z', 'Z') : undefined);
    const stored = { ...structuredClone(obj), metadata: { ...obj.metadata, name, uid: obj.metadata?.uid ?? `uid-${name}`, resourceVersion: String(this.nextVersion++), ...(created ? { creationTimestamp: created } : {}) } };
    this.of(r).set(name, stored);
    this.notify(r, (i) => i.set(structuredClone(stored)));
    return structuredClone(stored);
  }

  get<T extends KubeObject>(r: ResourceType, name: string): Promise<T> {
    const o = this.of(r).get(name);
    return o ? Promise.resolve(structuredClone(o) as T) : Promise.reject(apiError(404, 'NotFound', `${r.plural} "${name}" not found`));
  }

  create<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> {
    const name = obj.metadata?.name;
    if (name && this.of(r).has(name)) return Promise.reject(apiError(409, 'AlreadyExists', `${r.plural} "${name}" already exists`));
    return Promise.resolve(this.seed(r, { ...obj, metadata: { ...obj.metadata, uid: undefined } }));
  }

  replace<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> {
    const name = obj.metadata?.name ?? '';
    const old = this.of(r).get(name);
    if (!old) return Promise.reject(apiError(404, 'NotFound', `${r.plural} "${name}" not found`));
    if (obj.metadata?.resourceVersion !== old.metadata?.resourceVersion) return Promise.reject(apiError(409, 'Conflict', `the object has been modified`));
    const stored = { ...structuredClone(obj), metadata: { ...obj.metadata, uid: old.metadata?.uid, resourceVersion: String(this.nextVersion++) } };
    this.of(r).set(name, stored);
    this.notify(r, (i) => i.set(structuredClone(stored)));
    return Promise.resolve(structuredClone(stored) as T);
  }

  delete(r: ResourceType, name: string, _namespace?: string, opts: { preconditions?: { uid?: string; resourceVersion?: string } } = {}): Promise<void> {
    const old = this.of(r).get(name);
    if (!old) return Promise.reject(apiError(404, 'NotFound', `${r.plural} "${name}" not found`));
    const p = opts.preconditions ?? {};
    if ((p.uid !== undefined && p.uid !== old.metadata?.uid) || (p.resourceVersion !== undefined && p.resourceVersion !== old.metadata?.resourceVersion)) {
      return Promise.reject(apiError(409, 'Conflict', `Precondition failed: the object has been modified`));
    }
    this.of(r).delete(name);
    this.notify(r, (i) => i.remove(old));
    return Promise.resolve();
  }

  private notify(r: ResourceType, fn: (i: FakeInformer<KubeObject>) => void): void {
    const i = this.watchers.get(r.plural);
    if (i) setImmediate(() => fn(i));
  }

  private of(r: ResourceType): Map<string, KubeObject> {
    let m = this.objects.get(r.plural);
    if (!m) this.objects.set(r.plural, (m = new Map<string, KubeObject>()));
    return m;
  }
}

/** An informer filled by hand: set and remove update its cache and fire its handlers, as watch events do. */
export class FakeInformer<T extends KubeObject> implements InformerView<T> {
  readonly cache = new IndexedCache<T>();
  private readonly handlers: EventHandler<T>[] = [];

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    this.cache.addIndex(name, fn);
  }

  set(obj: T): void {
    const old = this.cache.upsert(obj);
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, obj);
      else h.onAdd?.(obj);
    }
  }

  remove(obj: T): void {
    const meta = obj.metadata ?? {};
    const old = this.cache.remove(meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name ?? '');
    for (const h of this.handlers) h.onDelete?.(old ?? obj);
  }
}

export interface FakeInformers extends CapacityInformers {
  nodes: FakeInformer<Node>;
  csiNodes: FakeInformer<CSINode>;
  classes: FakeInformer<StorageClass>;
  volumes: FakeInformer<PersistentVolume>;
  objects: FakeInformer<CSIStorageCapacity>;
  claims: FakeInformer<PersistentVolumeClaim>;
  failures: FakeInformer<Event>;
}

export function fakeInformers(): FakeInformers {
  return { nodes: new FakeInformer(), csiNodes: new FakeInformer(), classes: new FakeInformer(), volumes: new FakeInformer(), objects: new FakeInformer(), claims: new FakeInformer(), failures: new FakeInformer() };
}

/** GetCapacity answered from memory; `calls` lists the requests in the order they were asked. */
export class FakeMeter implements CapacityMeter {
  readonly calls: { parameters: Record<string, string>; segment: Segment }[] = [];
  /** Set: every call fails with it (e.g. a CsiError), instead of answering. */
  failure?: Error;
  /** Set: a call whose parameters it returns an error for fails with that error. */
  failureFor?: (parameters: Record<string, string>) => Error | undefined;
  /** Runs as each call is asked, before it answers (what happens in the world during a call). */
  during?: () => void;
  constructor(public answer: MeasuredCapacity = { available: 100n << 30n }) {}

  private gate: Promise<void> = Promise.resolve();

  get(parameters: Record<string, string>, segment: Segment): Promise<MeasuredCapacity> {
    this.calls.push({ parameters, segment });
    this.during?.();
    const answer = this.answer;
    const failure = this.failure ?? this.failureFor?.(parameters);
    return this.gate.then(() => (failure ? Promise.reject(failure) : answer));
  }

  /** Calls made from now on answer only once the returned function is called (a slow driver). */
  hold(): () => void {
    let release = (): void => undefined;
    this.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    return () => {
      this.gate = Promise.resolve();
      release();
    };
  }
}

/**
 * A work queue and its worker in one, on a hand-moved clock: added keys are merged by keyString
 * and handed to the reconcile by `drain`; a Result's requeueAfterMs comes due when `advance`
 * moves the clock past it (the controller's delayed add).
 */
export class FakeCapacityQueue implements CapacityQueue {
  private readonly ready = new Map<string, CapacityKey>();
  private readonly delayed = new Map<string, { key: CapacityKey; at: number }>();
  now = 1_000_000;

  add(key: CapacityKey): void {
    this.ready.set(capacityKeyString(key), key);
  }

  /** Reconciles until nothing is ready, letting the GetCapacity calls (promises) land in between. */
  async drain(reconcile: (ctx: ReconcileContext, key: CapacityKey) => Promise<Result>): Promise<void> {
    for (let round = 0; round < 100; round++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.ready.size === 0) return;
      const keys = [...this.ready.values()];
      this.ready.clear();
      for (const key of keys) {
        const ks = capacityKeyString(key);
        const r = await reconcile(testContext(), key);
        const at = r.requeueAfterMs !== undefined ? this.now + r.requeueAfterMs : undefined;
        const had = this.delayed.get(ks);
        if (at !== undefined && (!had || at < had.at)) this.delayed.set(ks, { key, at });
      }
    }
    throw new Error('the capacity loop never settled');
  }

  /** Moves the clock on; keys whose requeue came due are ready again. */
  advance(ms: number): void {
    this.now += ms;
    for (const [ks, d] of this.delayed) {
      if (d.at > this.now) continue;
      this.delayed.delete(ks);
      this.add(d.key);
    }
  }
}

export function testContext(): ReconcileContext {
  return { controller: 'capacity-test', reconcileId: 'test', log: logger(), signal: new AbortController().signal };
}
