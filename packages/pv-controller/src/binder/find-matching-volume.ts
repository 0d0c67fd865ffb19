import { labelSelectorMatches, volumeNodeAffinityMatches } from '@topovol/shared';
import type { Node, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimClass, claimVolumeMode, volumeClass, volumeVolumeMode } from './claim-helpers.js';
import { accessModesSatisfied, capacityBytes, requestedBytes } from './check-volume-satisfies-claim.js';

/** Whether the volume's claimRef names this claim (by uid when it has one, else by name). */
export function isPreBoundTo(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = volume.spec?.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace) return false;
  return !ref.uid || ref.uid === claim.metadata?.uid;
}

export interface MatchOptions {
  /** The claim's class waits for a consumer: only pre-bound volumes (or ones for `node`) qualify. */
  delayBinding: boolean;
  /** The node the consumer runs on; volumes must be reachable from it. */
  node?: Node;
}

/**
 * The volume a claim should bind to, as upstream's FindMatchingVolume: a volume pre-bound to the
 * claim wins; otherwise the smallest Available volume of the claim's class that satisfies access
 * modes, volumeMode, size and the claim's selector (and, given a node, is reachable from it).
 * Volumes being deleted or claimed by another claim are never chosen.
 */
export function findMatchingVolume(claim: PersistentVolumeClaim, candidates: Iterable<PersistentVolume>, opts: MatchOptions): PersistentVolume | undefined {
  const want = requestedBytes(claim);
  if (want === undefined) return undefined;
  const cls = claimClass(claim);
  const mode = claimVolumeMode(claim);
  let best: PersistentVolume | undefined;
  let bestSize = Infinity;
  for (const v of candidates) {
    const size = capacityBytes(v);
    if (size === undefined || size < want) continue;
    if (volumeVolumeMode(v) !== mode) continue;
    if (v.metadata?.deletionTimestamp) continue;
    const reachable = !opts.node || volumeNodeAffinityMatches(v.spec?.nodeAffinity, opts.node);
    if (isPreBoundTo(v, claim)) {
      // Pre-bound (by a user or the scheduler): the claim's, unless the consumer's node cannot
      // reach it, in which case nothing else may be chosen either.
      return reachable ? v : undefined;
    }
    if (opts.delayBinding && !opts.node) continue;
    if (v.spec?.claimRef) continue;
    if (v.status?.phase === 'Released' || v.status?.phase === 'Failed') continue;
    if (!labelSelectorMatches(claim.spec?.selector, v.metadata?.labels)) continue;
    if (volumeClass(v) !== cls) continue;
    if (!reachable) continue;
    if (!accessModesSatisfied(claim, v)) continue;
    if (size < bestSize || (size === bestSize && (v.metadata?.name ?? '') < (best?.metadata?.name ?? ''))) {
      best = v;
      bestSize = size;
    }
  }
  return best;
}
