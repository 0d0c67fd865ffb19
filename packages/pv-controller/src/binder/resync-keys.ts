import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimKey, volumeKey } from './binder-key.js';
import type { BinderKey } from './binder-key.js';
import type { BinderWorld } from './binder-world.js';
import { decideClaim } from './decide-claim.js';
import { decideVolume } from './decide-volume.js';

/** Whether a decision plans anything; one that throws does (its reconcile reports the error and retries). */
function plans(decide: () => readonly unknown[]): boolean {
  try {
    return decide().length > 0;
  } catch {
    return true;
  }
}

/**
 * The keys a periodic re-sync queues: every claim and volume whose decision, over the caches as
 * they are now, plans anything at all (a write, an Event, a wait, a note). Upstream's re-sync
 * (pv_controller_base.go, resync) queues every object and lets each sync find it has nothing to
 * do. The decisions are pure and the reconcile of a key they plan nothing for writes and reads
 * nothing, so asking them here ends in the same state, without a trip through the queue, a
 * reconcile's log context and metrics for each of N bound pairs every period.
 *
 * Keys already queued are skipped without deciding: their reconcile is coming anyway. A decision
 * that throws (an object no decision foresaw) queues its key, so the walk goes on and the error is
 * reported by that key's reconcile (log, metric, retry), never by the timer that runs the walk.
 */
export function* keysNeedingSync(
  claims: Iterable<PersistentVolumeClaim>,
  volumes: Iterable<PersistentVolume>,
  world: BinderWorld,
  queued: (key: BinderKey) => boolean,
): Generator<BinderKey> {
  for (const c of claims) {
    const namespace = c.metadata?.namespace ?? '';
    const name = c.metadata?.name ?? '';
    const key = claimKey(namespace, name);
    if (queued(key)) continue;
    // The world's view (the assume cache over the informer's), as the reconcile would read it.
    const claim = world.claim(namespace, name);
    if (claim && plans(() => decideClaim(claim, world))) yield key;
  }
  for (const v of volumes) {
    const name = v.metadata?.name ?? '';
    const key = volumeKey(name);
    if (queued(key)) continue;
    const volume = world.volume(name);
    if (volume && plans(() => decideVolume(volume, world))) yield key;
  }
}
