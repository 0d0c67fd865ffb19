import fc from 'fast-check';
import type { Event } from '@topovol/shared';

/**
 * What a recorder adds to an Event that the Event projections (projectEvent, slimEvent) drop:
 * labels, annotations, the source and reporting fields, related objects, the involved object's
 * other fields. Plus fields they keep, varied so that a projection that lost one would decide
 * differently: the count, the message's tail, and where the time is written (lastTimestamp as
 * core/v1 recorders write it, or only eventTime and a series as events.k8s.io/v1 recorders do).
 * For property tests: decisions on the projection must equal decisions on the whole Event.
 */
export const eventNoiseArb = fc.record({
  labels: fc.option(fc.dictionary(fc.constantFrom('app', 'x'), fc.string({ maxLength: 8 })), { nil: undefined }),
  annotations: fc.option(fc.dictionary(fc.constantFrom('example.com/a', 'example.com/b'), fc.string({ maxLength: 8 })), { nil: undefined }),
  reporting: fc.boolean(),
  related: fc.boolean(),
  count: fc.constantFrom<number | undefined>(undefined, 1, 7),
  messageTail: fc.constantFrom('', ' (will retry)', ': rpc error: code = Unavailable'),
  /** Where the time is written: as core/v1 recorders do, or only as eventTime (with a series, or not). */
  time: fc.constantFrom<'asIs' | 'eventTime' | 'series'>('asIs', 'asIs', 'eventTime', 'series'),
});
export type EventNoise = typeof eventNoiseArb extends fc.Arbitrary<infer T> ? T : never;

/** The Event with the noise added (a new object, with its apiVersion and kind). */
export function withEventNoise(e: Event, n: EventNoise): Event {
  const out: Event = { ...structuredClone(e), apiVersion: 'v1', kind: 'Event' };
  const md = (out.metadata ??= {});
  if (n.labels) md.labels = { ...md.labels, ...n.labels };
  if (n.annotations) md.annotations = { ...md.annotations, ...n.annotations };
  md.managedFields = [{ manager: 'csi-provisioner', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:count': {} } }];
  out.involvedObject = { ...out.involvedObject, apiVersion: 'v1', resourceVersion: '42', fieldPath: 'spec' };
  if (n.related) out.related = { kind: 'Pod', namespace: 'ns', name: 'p', uid: 'uid-p' };
  if (out.message !== undefined) out.message += n.messageTail;
  const at = out.lastTimestamp ?? out.eventTime;
  if (n.time !== 'asIs' && at) {
    // events.k8s.io/v1's recorder: eventTime with microseconds, its reporting fields (the API
    // server requires them with eventTime), no lastTimestamp or count; a series once it repeats.
    const micro = (ms: number): string => new Date(ms).toISOString().replace('Z', '000Z');
    delete out.lastTimestamp;
    delete out.firstTimestamp;
    delete out.count;
    Object.assign(out, { eventTime: micro(Date.parse(at)), reportingComponent: 'csi-provisioner', reportingInstance: 'csi-provisioner-node-a', action: 'Provisioning' });
    if (n.time === 'series') out.series = { count: 2, lastObservedTime: micro(Date.parse(at) + 20_000) };
    return out;
  }
  if (n.reporting) Object.assign(out, { source: { component: 'csi-provisioner', host: 'node-a' }, reportingComponent: 'csi-provisioner', reportingInstance: 'csi-provisioner-node-a', action: 'Provisioning' });
  if (n.count !== undefined) out.count = n.count;
  return out;
}
