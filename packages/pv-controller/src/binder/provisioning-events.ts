import type { Event, KubeObject } from '@topovol/shared';

/** Keep only what the stale-selected-node check reads from a provisioner's Event. */
export function slimProvisioningEvent(o: KubeObject): Event {
  const e = o as Event;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: e.metadata?.name, namespace: e.metadata?.namespace, resourceVersion: e.metadata?.resourceVersion, uid: e.metadata?.uid },
    involvedObject: { kind: e.involvedObject?.kind, namespace: e.involvedObject?.namespace, name: e.involvedObject?.name, uid: e.involvedObject?.uid },
    reason: e.reason,
    firstTimestamp: e.firstTimestamp,
    lastTimestamp: e.lastTimestamp,
    eventTime: e.eventTime,
    series: e.series,
  };
}

/** When the Event last happened: the newest of its timestamps (legacy recorders set lastTimestamp, events.k8s.io ones eventTime/series). */
export function eventTime(e: Event): number {
  const stamps = [e.lastTimestamp, e.firstTimestamp, e.eventTime, e.series?.lastObservedTime].map((t) => (t ? Date.parse(t) : NaN)).filter((t) => !Number.isNaN(t));
  return stamps.length > 0 ? Math.max(...stamps) : 0;
}
