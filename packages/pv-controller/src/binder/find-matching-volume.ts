import { labelSelectorMatches, nodeSelectorNeverMatches, volumeNodeAffinityMatches } from '@topovol/shared';
import type { Node, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { accessModesKey, groupsForClaim } from './access-modes.js';
import { claimClass, claimVolumeMode, volumeClass, volumeVolumeMode } from './claim-helpers.js';
import { accessModesSatisfied, capacityBytes, claimVac, isUnclaimedPhase, requestedBytes, volumeVac } from './check-volume-satisfies-claim.js';

/** Whether the volume's claimRef names this claim (by uid when it has one, else by name): IsVolumeBoundToClaim. */
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
  /**
   * Topovol: whether a free-looking volume may hold another claim's data (a claim Bound to it that
   * names it: BinderWorld.claimsBoundTo); such a volume is never taken from the free pool. Upstream
   * offers it (its claimRef removed, the volume made Available), and whichever sync comes first
   * binds it: the other claim may get the data (docs/divergences.md).
   */
  heldForAnother?: (v: PersistentVolume) => boolean;
}

/** What any candidate must have, pre-bound or not (the first filters of FindMatchingVolume). */
function fits(claim: PersistentVolumeClaim, v: PersistentVolume, want: bigint): boolean {
  const size = capacityBytes(v);
  return (
    size !== undefined &&
    size >= want &&
    volumeVolumeMode(v) === claimVolumeMode(claim) &&
    volumeVac(v) === claimVac(claim) &&
    !v.metadata?.deletionTimestamp &&
    accessModesSatisfied(claim, v)
  );
}

/** What a volume that is not pre-bound to the claim must also have. */
function freeFor(claim: PersistentVolumeClaim, v: PersistentVolume, opts: MatchOptions): boolean {
  return (
    !v.spec?.claimRef &&
    isUnclaimedPhase(v) &&
    !opts.heldForAnother?.(v) &&
    labelSelectorMatches(claim.spec?.selector, v.metadata?.labels) &&
    volumeClass(v) === claimClass(claim) &&
    // Without a node (an Immediate or class-less claim), never a volume whose affinity matches no
    // node at all: its pod could never be scheduled. Upstream binds it (docs/divergences.md).
    (opts.node ? volumeNodeAffinityMatches(v.spec?.nodeAffinity, opts.node) : nodeSelectorNeverMatches(v.spec?.nodeAffinity?.required) === undefined)
  );
}

const byName = (a: PersistentVolume, b: PersistentVolume): number => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1);

/**
 * The pre-bound volume for the claim, if any: the claim's whatever its class, selector, phase or
 * node affinity, as upstream. With several, upstream's order: access-mode group by group from the
 * fewest modes (findByClaim in index.go asks FindMatchingVolume group by group, and that returns the
 * first pre-bound volume it meets), then by name where upstream takes whichever it meets first. Of
 * those, the first the consumer's node can reach; if it can reach none, still the first: a
 * pre-binding is an instruction, and neither another volume nor a new one may take its place.
 */
function preBoundChoice(claim: PersistentVolumeClaim, volumes: PersistentVolume[], opts: MatchOptions, want: bigint): PersistentVolume | undefined {
  const named = volumes.filter((v) => isPreBoundTo(v, claim) && fits(claim, v, want));
  if (named.length > 1) {
    const groups = groupsForClaim(named.map((v) => accessModesKey(v.spec?.accessModes)), claim.spec?.accessModes);
    const rank = (v: PersistentVolume): number => groups.indexOf(accessModesKey(v.spec?.accessModes));
    named.sort((a, b) => rank(a) - rank(b) || byName(a, b));
  }
  return named.find((v) => !opts.node || volumeNodeAffinityMatches(v.spec?.nodeAffinity, opts.node)) ?? named[0];
}

/**
 * The volume a claim should bind to, by upstream's rules (FindMatchingVolume in
 * k8s.io/component-helpers/storage/volume/pv_helpers.go over the access-mode groups of
 * pkg/controller/volume/persistentvolume/index.go): a volume pre-bound to the claim wins; otherwise,
 * group by group from the fewest access modes, the smallest Available volume of the claim's class
 * that satisfies volumeMode, VolumeAttributesClass, size and the claim's selector (and, given a node,
 * is reachable from it). Ties go to the first name. This is the reference over a plain list;
 * findBestVolume gives the same answer from the binder's indexes.
 */
export function findMatchingVolume(claim: PersistentVolumeClaim, candidates: Iterable<PersistentVolume>, opts: MatchOptions): PersistentVolume | undefined {
  const want = requestedBytes(claim);
  if (want === undefined) return undefined;
  const volumes = [...candidates];
  const pre = preBoundChoice(claim, volumes, opts, want);
  if (pre) return pre;
  if (opts.delayBinding && !opts.node) return undefined;
  for (const group of groupsForClaim(volumes.map((v) => accessModesKey(v.spec?.accessModes)), claim.spec?.accessModes)) {
    let best: PersistentVolume | undefined;
    for (const v of volumes) {
      if (accessModesKey(v.spec?.accessModes) !== group || !fits(claim, v, want) || !freeFor(claim, v, opts)) continue;
      const size = capacityBytes(v)!;
      const bestSize = best ? capacityBytes(best)! : undefined;
      if (bestSize === undefined || size < bestSize || (size === bestSize && byName(v, best!) < 0)) best = v;
    }
    if (best) return best;
  }
  return undefined;
}

/** Where findBestVolume looks: indexed candidates, never all volumes. */
export interface VolumeCandidates {
  /** Volumes whose claimRef names the claim (by namespace/name). */
  preBoundVolumes(namespace: string, name: string): PersistentVolume[];
  /** The access-mode groups (accessModesKey) holding free volumes of a class. */
  accessModeGroups(storageClassName: string): Iterable<string>;
  /**
   * Free volumes of a class and access-mode group with at least `minBytes`, smallest first (then by
   * name); only those reachable from `nodeName` when given.
   */
  freeVolumes(storageClassName: string, accessModes: string, minBytes: bigint, nodeName?: string): Iterable<PersistentVolume>;
}

/** findMatchingVolume over the binder's indexes: within each group, the first acceptable volume is the smallest. */
export function findBestVolume(claim: PersistentVolumeClaim, world: VolumeCandidates, opts: MatchOptions): PersistentVolume | undefined {
  const want = requestedBytes(claim);
  if (want === undefined) return undefined;
  const pre = preBoundChoice(claim, world.preBoundVolumes(claim.metadata?.namespace ?? '', claim.metadata?.name ?? ''), opts, want);
  if (pre) return pre;
  if (opts.delayBinding && !opts.node) return undefined;
  const cls = claimClass(claim);
  for (const group of groupsForClaim(world.accessModeGroups(cls), claim.spec?.accessModes)) {
    for (const v of world.freeVolumes(cls, group, want, opts.node?.metadata?.name)) {
      if (fits(claim, v, want) && freeFor(claim, v, opts)) return v;
    }
  }
  return undefined;
}
