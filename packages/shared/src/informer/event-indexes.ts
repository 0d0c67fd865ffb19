import type { Event } from '../types/wire.js';

/**
 * Events filed under the uid of the object they are about: a claim's provisioning Events, found
 * without a scan. One function for every loop, since addIndex accepts an index added again only as
 * the same function.
 */
export function involvedObjectUid(e: Event): string[] {
  return e.involvedObject?.uid ? [e.involvedObject.uid] : [];
}
