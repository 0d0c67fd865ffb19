import { ANN_PRE_RESIZE_CAPACITY, quantityBytes } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';

export type ClaimPhase = 'Pending' | 'Bound' | 'Lost';
type ClaimStatus = NonNullable<PersistentVolumeClaim['status']>;

function sameList(a: readonly string[] | undefined | null, b: readonly string[] | undefined | null): boolean {
  if (!a || !b) return !a === !b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * The claim status the binder writes for a phase, or undefined when the current one is already
 * right: upstream's updateClaimStatus (pv_controller.go). Without a volume (Pending, Lost), access
 * modes, capacity and the current VolumeAttributesClass are cleared. With one, access modes follow
 * the volume; capacity is set only when the claim becomes Bound, never rewritten afterwards (a
 * filesystem smaller than its block device is deliberate), and a pending resize's pre-resize
 * capacity wins; the current VolumeAttributesClass is set only on Pending → Bound.
 */
export function claimStatusFor(claim: PersistentVolumeClaim, phase: ClaimPhase, volume?: PersistentVolume): ClaimStatus | undefined {
  const cur = claim.status ?? {};
  const next: ClaimStatus = { ...cur, phase };
  let dirty = cur.phase !== phase;
  if (!volume) {
    for (const k of ['accessModes', 'capacity', 'currentVolumeAttributesClassName'] as const) {
      if (cur[k] !== undefined && cur[k] !== null) {
        delete next[k];
        dirty = true;
      }
    }
    return dirty ? next : undefined;
  }
  if (!sameList(cur.accessModes, volume.spec?.accessModes)) {
    next.accessModes = volume.spec?.accessModes;
    dirty = true;
  }
  if (cur.phase !== phase) {
    const volumeCapacity = volume.spec?.capacity?.storage;
    const preResize = volume.metadata?.annotations?.[ANN_PRE_RESIZE_CAPACITY];
    if (preResize !== undefined) {
      // An unreadable annotation falls back to the volume's capacity, as upstream.
      next.capacity = { ...cur.capacity, storage: quantityBytes(preResize) !== undefined ? preResize : (volumeCapacity ?? '0') };
    } else if (volumeCapacity !== undefined && quantityBytes(cur.capacity?.storage) !== quantityBytes(volumeCapacity)) {
      next.capacity = { ...volume.spec?.capacity };
    }
    if (cur.phase === 'Pending' && phase === 'Bound' && (cur.currentVolumeAttributesClassName ?? undefined) !== (volume.spec?.volumeAttributesClassName ?? undefined)) {
      next.currentVolumeAttributesClassName = volume.spec?.volumeAttributesClassName;
    }
  }
  // Every change above marks dirty (those under a phase change are dirty by it): the claim of a
  // bound pair in order, checked on each of its events and re-syncs, costs no serialization.
  return dirty ? next : undefined;
}
