import type { Event } from '../types/wire.js';
import type { KubeObject } from './object-key.js';

/**
 * Events filed under the uid of the object they are about: a claim's provisioning Events, found
 * without a scan. One function for every loop, since addIndex accepts an index added again only as
 * the same function.
 */
export function involvedObjectUid(e: Event): string[] {
  return e.involvedObject?.uid ? [e.involvedObject.uid] : [];
}

/**
 * Of the Events filed under an object's uid, those about it: in its namespace and naming it. Whoever
 * creates an Event writes its involvedObject, and a uid alone can be copied into an Event in any
 * namespace (the API server checks an Event's namespace against its involvedObject's only for
 * Events without eventTime), so a uid match alone would let one namespace speak for another's objects.
 */
export function eventsAbout(events: readonly Event[], obj: KubeObject): Event[] {
  const ns = obj.metadata?.namespace;
  return events.filter((e) => e.metadata?.namespace === ns && e.involvedObject?.namespace === ns && e.involvedObject?.name === obj.metadata?.name);
}
