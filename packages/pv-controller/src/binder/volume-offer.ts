import type { PersistentVolume } from '@topovol/shared';
import { isUnclaimedPhase } from './check-volume-satisfies-claim.js';

/** Free = could be chosen for a new claim: no claimRef, not being deleted, Available or new (as upstream). */
export function isFreeVolume(v: PersistentVolume): boolean {
  return !v.spec?.claimRef && !v.metadata?.deletionTimestamp && isUnclaimedPhase(v);
}

const json = (o: unknown): string => JSON.stringify(o ?? {});

/**
 * What matching a free volume to a claim reads of it beyond being free: its spec, its labels (a
 * claim's selector) and its annotations (the beta storage-class one). Compared whole, so a field a
 * later check reads is covered too.
 */
function sameOffer(a: PersistentVolume, b: PersistentVolume): boolean {
  return json(a.spec) === json(b.spec) && json(a.metadata?.labels) === json(b.metadata?.labels) && json(a.metadata?.annotations) === json(b.metadata?.annotations);
}

/**
 * Whether a volume event may let a waiting claim take a volume it could not take before: the
 * volume is free now, and was not (or was not known), or offers something else. Only then are
 * the claims of its class queued again, a walk of every waiting claim of the class; a free volume's
 * own status write (its `Available` phase) changes nothing any claim matches on, and at 10,000
 * waiting claims a walk per such write was the binder's largest single cost after the HTTP client.
 */
export function newlyOffered(old: PersistentVolume | undefined, v: PersistentVolume): boolean {
  if (!isFreeVolume(v)) return false;
  return !old || !isFreeVolume(old) || !sameOffer(old, v);
}
