import { slimEvent } from '@topovol/shared';
import type { Event } from '@topovol/shared';

/** What the stale-selected-node check reads of a provisioner's Event (the shared slim projection). */
export const slimProvisioningEvent = slimEvent;

/** When the Event last happened: the newest of its timestamps (legacy recorders set lastTimestamp, events.k8s.io ones eventTime/series). */
export function eventTime(e: Event): number {
  const stamps = [e.lastTimestamp, e.firstTimestamp, e.eventTime, e.series?.lastObservedTime].map((t) => (t ? Date.parse(t) : NaN)).filter((t) => !Number.isNaN(t));
  return stamps.length > 0 ? Math.max(...stamps) : 0;
}
