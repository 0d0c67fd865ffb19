import type { Event, PersistentVolumeClaim } from '../types/wire.js';
import type { Informer } from './informer.js';
import type { InformerSource } from './informer-scope.js';
import type { KubeObject } from './object-key.js';
import { involvedObjectUid } from './event-indexes.js';
import { Resources } from './resources.js';

/**
 * How many Events of one claim a loop caches. external-provisioner's recorder folds its repeats of
 * one Event into one object (its count and lastTimestamp move), so a claim has one or two of each
 * reason; the rest are someone else's, and a decision that needs every one reads them from the server.
 */
export const MAX_CACHED_EVENTS_PER_CLAIM = 8;

/** The Event index of the claims' uids (each loop reads a claim's Events with eventsAbout over it). */
export const CLAIM_UID_INDEX = 'claimUid';

/**
 * Which Events, of those a loop watches, its cache holds: those that name, in their own namespace, a
 * claim the claims cache has (namespace, name and uid, as eventsAbout matches them), at most
 * MAX_CACHED_EVENTS_PER_CLAIM a claim, first come. Anyone who may create Events in a namespace may
 * create as many as its quota allows (none, without one), naming any uid; cached whole, they would
 * take the heap to its limit and every restart would list them again. Bounded so, the cache holds
 * at most the bound times the claims (which are cached anyway) plus those of claims deleted in the
 * last hour (an Event lives an hour, kube-apiserver's --event-ttl, and is not looked at again when
 * its claim goes). Exported for tests.
 */
export class ClaimEventBudget {
  /** Each kept Event (its cache key) and the claim it counts against. */
  private readonly kept = new Map<string, string>();
  private readonly perClaim = new Map<string, number>();

  constructor(
    private readonly claimCached: (namespace: string, name: string, uid: string) => boolean,
    private readonly max = MAX_CACHED_EVENTS_PER_CLAIM,
  ) {}

  /** Whether to cache e (the informer's keep): kept already under the same claim, or a new one within the claim's bound. */
  admit(e: Event): boolean {
    const key = eventKey(e);
    const claim = claimOf(e);
    const had = this.kept.get(key);
    if (claim !== undefined && had === claim) return true;
    // Rewritten to name another claim (core/v1 lets an Event's involvedObject change), or no longer
    // admissible: it counts against its old claim no more.
    if (had !== undefined) this.release(key);
    const o = e.involvedObject;
    if (claim === undefined || !o?.namespace || !o.name || !o.uid || !this.claimCached(o.namespace, o.name, o.uid)) return false;
    const n = this.perClaim.get(claim) ?? 0;
    if (n >= this.max) return false;
    this.perClaim.set(claim, n + 1);
    this.kept.set(key, claim);
    return true;
  }

  /** The Event left the cache (deleted, or not kept on its last change). */
  forget(e: Event): void {
    this.release(eventKey(e));
  }

  /** Events counted (for tests and the memory's bound). */
  get size(): number {
    return this.kept.size;
  }

  private release(key: string): void {
    const claim = this.kept.get(key);
    if (claim === undefined) return;
    this.kept.delete(key);
    const n = (this.perClaim.get(claim) ?? 1) - 1;
    if (n > 0) this.perClaim.set(claim, n);
    else this.perClaim.delete(claim);
  }
}

/** namespace/name/uid of the claim an Event names in its own namespace (eventsAbout's rule), if it names one. */
function claimOf(e: Event): string | undefined {
  const o = e.involvedObject;
  if (!o?.uid || !o.name || !o.namespace || o.namespace !== e.metadata?.namespace) return undefined;
  return `${o.namespace}/${o.name}/${o.uid}`;
}

const eventKey = (e: Event): string => `${e.metadata?.namespace ?? ''}/${e.metadata?.name ?? ''}`;

/** One budget and keep per claims cache and selector, so that loops sharing the informer ask for it identically. */
interface SharedKeep {
  keep: (e: Event) => boolean;
  budget: ClaimEventBudget;
  wired: boolean;
}
const shared = new WeakMap<Informer<PersistentVolumeClaim>, Map<string, SharedKeep>>();

/**
 * The shared informer of the claims' Events matching `fieldSelector` (a reason's), holding only
 * what ClaimEventBudget admits, indexed by claim uid (CLAIM_UID_INDEX). Until the claims are
 * listed no Event is admitted; once they are, the Events are listed again, so a cache listed
 * first is filled then.
 */
export function claimEventsInformer(informers: InformerSource, claims: Informer<PersistentVolumeClaim>, fieldSelector: string, transform: (o: KubeObject) => Event): Informer<Event> {
  let bySelector = shared.get(claims);
  if (!bySelector) shared.set(claims, (bySelector = new Map<string, SharedKeep>()));
  let entry = bySelector.get(fieldSelector);
  if (!entry) {
    const budget = new ClaimEventBudget((ns, name, uid) => claims.hasSynced() && claims.cache.get(`${ns}/${name}`)?.metadata?.uid === uid);
    entry = { keep: (e) => budget.admit(e), budget, wired: false };
    bySelector.set(fieldSelector, entry);
  }
  const events = informers.forResource<Event>(Resources.events, { fieldSelector, transform, keep: entry.keep });
  if (!entry.wired) {
    entry.wired = true;
    const budget = entry.budget;
    events.addIndex(CLAIM_UID_INDEX, involvedObjectUid);
    events.addEventHandler({ onDelete: (e) => budget.forget(e) });
    void claims.waitForSync().then(() => {
      if (!events.listedAfter(claims)) events.relist();
    });
  }
  return events;
}
