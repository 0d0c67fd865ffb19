import { slimEvent } from '@topovol/shared';
import type { Event } from '@topovol/shared';

/** What the stale-selected-node check reads of a provisioner's Event (the shared slim projection). */
export const slimProvisioningEvent = slimEvent;

/**
 * When the Event last happened: the newest of its timestamps (legacy recorders set lastTimestamp,
 * events.k8s.io ones eventTime/series). A timestamp to the second (lastTimestamp is) is read as the
 * end of that second: the Event may have happened up to 999 ms after it, and reading it earlier
 * would shorten a quiet period measured from it.
 */
export function eventTime(e: Event): number {
  const stamps = [e.lastTimestamp, e.firstTimestamp, e.eventTime, e.series?.lastObservedTime]
    .map((t) => (t ? Date.parse(t) + (/\.\d+/.test(t) ? 0 : 999) : NaN))
    .filter((t) => !Number.isNaN(t));
  return stamps.length > 0 ? Math.max(...stamps) : 0;
}
