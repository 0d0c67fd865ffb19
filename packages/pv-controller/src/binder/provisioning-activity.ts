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
   * The Event went and the claim it names is not cached (deleted before it, or never there: an
   * Event naming a uid no claim has): its memory goes too, or Events about claims gone (and made up
   * ones) would leave entries for ever. Bounded so by the Events alive, which all expire.
   */
  forgetClaimOf(e: Event): void {
    const c = claimOfEvent(e);
    if (c !== undefined) this.claims.delete(c);
  }

  forget(e: Event): void {
    this.seen.forget(key(e));
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
