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

/** Whether a volume that is not pre-bound to the claim may be chosen for it (size aside). */
function acceptableFree(claim: PersistentVolumeClaim, v: PersistentVolume, opts: MatchOptions, cls: string): boolean {
  if (v.spec?.claimRef) return false;
  if (v.status?.phase === 'Released' || v.status?.phase === 'Failed') return false;
  if (!labelSelectorMatches(claim.spec?.selector, v.metadata?.labels)) return false;
  if (volumeClass(v) !== cls) return false;
  if (opts.node && !volumeNodeAffinityMatches(v.spec?.nodeAffinity, opts.node)) return false;
  return accessModesSatisfied(claim, v);
}

type Verdict = 'skip' | 'preBound' | 'preBoundUnreachable' | 'free';

function judge(claim: PersistentVolumeClaim, v: PersistentVolume, opts: MatchOptions, want: number, cls: string, mode: string): Verdict {
  const size = capacityBytes(v);
  if (size === undefined || size < want) return 'skip';
  if (volumeVolumeMode(v) !== mode) return 'skip';
  if (v.metadata?.deletionTimestamp) return 'skip';
  if (isPreBoundTo(v, claim)) {
    // Pre-bound (by a user or the scheduler): the claim's, unless the consumer's node cannot
    // reach it, in which case nothing else may be chosen either.
    return !opts.node || volumeNodeAffinityMatches(v.spec?.nodeAffinity, opts.node) ? 'preBound' : 'preBoundUnreachable';
  }
  if (opts.delayBinding && !opts.node) return 'skip';
  return acceptableFree(claim, v, opts, cls) ? 'free' : 'skip';
}

/**
 * The volume a claim should bind to, as upstream's FindMatchingVolume
 * (k8s.io/component-helpers/storage/volume/pv_helpers.go): a volume pre-bound to the claim wins;
 * otherwise the smallest Available volume of the claim's class that satisfies access modes,
 * volumeMode, size and the claim's selector (and, given a node, is reachable from it). Volumes
 * being deleted or claimed by another claim are never chosen. `candidates` may come in any order.
 */
export function findMatchingVolume(claim: PersistentVolumeClaim, candidates: Iterable<PersistentVolume>, opts: MatchOptions): PersistentVolume | undefined {
  const want = requestedBytes(claim);
  if (want === undefined) return undefined;
  const cls = claimClass(claim);
  const mode = claimVolumeMode(claim);
  let best: PersistentVolume | undefined;
  let bestSize = Infinity;
  for (const v of candidates) {
    const verdict = judge(claim, v, opts, want, cls, mode);
    if (verdict === 'preBound') return v;
    if (verdict === 'preBoundUnreachable') return undefined;
    if (verdict !== 'free') continue;
    const size = capacityBytes(v)!;
    if (size < bestSize || (size === bestSize && (v.metadata?.name ?? '') < (best?.metadata?.name ?? ''))) {
      best = v;
      bestSize = size;
    }
  }
  return best;
}

/** Where findBestVolume looks: indexed candidates, never all volumes. */
export interface VolumeCandidates {
  /** Volumes whose claimRef names the claim (by namespace/name). */
  preBoundVolumes(namespace: string, name: string): PersistentVolume[];
  /** Free volumes of a class with at least `minBytes`, smallest first (then by name); only those reachable from `nodeName` when given. */
  freeVolumes(storageClassName: string, minBytes: number, nodeName?: string): Iterable<PersistentVolume>;
}

/**
 * findMatchingVolume over the binder's indexes: pre-bound volumes first, then the free volumes of
 * the class in ascending size, stopping at the first acceptable one (which is the smallest).
 */
export function findBestVolume(claim: PersistentVolumeClaim, world: VolumeCandidates, opts: MatchOptions): PersistentVolume | undefined {
  const want = requestedBytes(claim);
  if (want === undefined) return undefined;
  const cls = claimClass(claim);
  const mode = claimVolumeMode(claim);
  for (const v of world.preBoundVolumes(claim.metadata?.namespace ?? '', claim.metadata?.name ?? '')) {
    const verdict = judge(claim, v, opts, want, cls, mode);
    if (verdict === 'preBound') return v;
    if (verdict === 'preBoundUnreachable') return undefined;
  }
  if (opts.delayBinding && !opts.node) return undefined;
  for (const v of world.freeVolumes(cls, want, opts.node?.metadata?.name)) {
    if (judge(claim, v, opts, want, cls, mode) === 'free') return v;
  }
  return undefined;
}
