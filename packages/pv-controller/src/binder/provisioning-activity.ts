import { FirstSeen } from '@topovol/shared';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';
import { eventTime } from './provisioning-events.js';

/**
 * When each external-provisioner `Provisioning` Event last showed activity, on this process's
 * clock as well as the provisioner's: the Event's own newest timestamp, or, when later, the moment
 * this process first saw its current version (each retry bumps its count, so a new resourceVersion).
 * A provisioner whose clock runs behind the binder's by more than the grace would otherwise look
 * quiet while it retries, and its selected node would be removed under a CreateVolume under way.
 * A version never seen here (the server's, read ahead of a lagging watch) counts as now.
 */
export class ProvisioningActivity {
  /** By Event: its resourceVersion, and when this process first saw it. */
  private readonly seen = new FirstSeen<string>();
  /**
   * By claim (as eventsAbout matches an Event to it: the Event's namespace, the claim's name and
   * uid): the latest activity its Events showed, kept after they are gone. An Event expires an
   * hour after its last write (kube-apiserver's --event-ttl), and whoever may write Events in the
   * namespace may delete or rewrite it; the attempt it recorded may still have made a volume.
   * Forgotten when the claim is bound or deleted.
   */
  private readonly claims = new Map<string, number>();

  /**
   * @param claimCached whether the claim cache has a claim of that namespace, name and uid;
   *   undefined while the claims have not been listed.
   */
  constructor(private readonly claimCached: (namespace: string, name: string, uid: string) => boolean | undefined = () => undefined) {}

  /** An Event of the informer's, added or updated, at `at` on this process's clock. */
  observe(e: Event, at: number): void {
    this.seen.note(key(e), e.metadata?.resourceVersion ?? '', at);
    const c = claimOfEvent(e);
    if (c !== undefined) this.claims.set(c, Math.max(this.claims.get(c) ?? -Infinity, this.timeOf(e, at)));
  }

  /** The latest activity remembered for the claim, from its Events seen since this process started, deleted ones included. */
  rememberedFor(c: PersistentVolumeClaim): number | undefined {
    return this.claims.get(claimIdentity(c.metadata?.namespace, c.metadata?.name, c.metadata?.uid));
  }

  /** The claim was bound or deleted: no selected node of its will be removed any more. */
  forgetClaim(c: PersistentVolumeClaim): void {
    this.claims.delete(claimIdentity(c.metadata?.namespace, c.metadata?.name, c.metadata?.uid));
  }

  /**
   * The Event was deleted. The attempts it recorded are still remembered for its claim while that
   * claim is cached (see `claims`); for a claim not cached (deleted before it, or never there: an
   * Event naming a uid no claim has) they go, or Events about claims gone (and made-up ones) would
   * leave entries for ever. Bounded so by the live Events, which all expire.
   */
  eventDeleted(e: Event): void {
    this.seen.forget(key(e));
    this.forgetUnlessCached(e);
  }

  /**
   * The Event was updated. A core/v1 Event's involvedObject may be rewritten (its update validation
   * checks only what a new Event's does): the claim it named before is let go as if the Event were
   * deleted, or one Event rewritten again and again would leave an entry each time.
   */
  eventUpdated(old: Event, e: Event, at: number): void {
    this.observe(e, at);
    if (claimOfEvent(old) !== claimOfEvent(e)) this.forgetUnlessCached(old);
  }

  /** How many claims have attempts remembered (for tests and the memory's bound). */
  size(): number {
    return this.claims.size;
  }

  private forgetUnlessCached(e: Event): void {
    const c = claimOfEvent(e);
    const o = e.involvedObject;
    // Before the claims are listed (undefined), a claim not cached yet may still be there.
    if (c !== undefined && this.claimCached(o?.namespace ?? '', o?.name ?? '', o?.uid ?? '') === false) this.claims.delete(c);
  }

  /** The Event's last activity, by either clock (see the class). */
  timeOf(e: Event, now: number): number {
    const s = this.seen.get(key(e));
    const seenAt = s && s.value === (e.metadata?.resourceVersion ?? '') ? s.since : now;
    return Math.max(eventTime(e), seenAt);
  }
}

const claimIdentity = (namespace: string | undefined, name: string | undefined, uid: string | undefined): string => `${namespace ?? ''}/${name ?? ''}/${uid ?? ''}`;

/** The claim an Event is about, when it names one in its own namespace (eventsAbout's rule). */
function claimOfEvent(e: Event): string | undefined {
  const o = e.involvedObject;
  if (!o?.uid || !o.name || o.namespace !== e.metadata?.namespace) return undefined;
  return claimIdentity(o.namespace, o.name, o.uid);
}

const key = (e: Event): string => e.metadata?.uid || `${e.metadata?.namespace ?? ''}/${e.metadata?.name ?? ''}`;
