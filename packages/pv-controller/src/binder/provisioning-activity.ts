import { FirstSeen } from '@topovol/shared';
import type { Event } from '@topovol/shared';
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

  /** An Event of the informer's, added or updated, at `at` on this process's clock. */
  observe(e: Event, at: number): void {
    this.seen.note(key(e), e.metadata?.resourceVersion ?? '', at);
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

const key = (e: Event): string => e.metadata?.uid || `${e.metadata?.namespace ?? ''}/${e.metadata?.name ?? ''}`;
