import { quantityBytes } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimClass, claimVolumeMode, volumeClass, volumeVolumeMode } from './claim-helpers.js';

/** Every requested access mode must be offered by the volume (CheckAccessModes). */
export function accessModesSatisfied(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  const offered = new Set(volume.spec?.accessModes ?? []);
  return (claim.spec?.accessModes ?? []).every((m) => offered.has(m));
}

/**
 * Sizes in whole bytes, exactly (bigint: a claim of 2^63 bytes must not fit a volume one byte
 * smaller, as it would with floats). Not positive counts as no size: the API server refuses such
 * values, so one can only come from an object written before validation or a forged cache entry.
 */
const positiveBytes = (q: string | undefined): bigint | undefined => {
  const b = quantityBytes(q);
  return b !== undefined && b > 0n ? b : undefined;
};

export function requestedBytes(claim: PersistentVolumeClaim): bigint | undefined {
  return positiveBytes(claim.spec?.resources?.requests?.storage);
}

export function capacityBytes(volume: PersistentVolume): bigint | undefined {
  return positiveBytes(volume.spec?.capacity?.storage);
}

/**
 * Available, or new (the binder has not written Available yet). Upstream takes only Available
 * volumes, to spare itself conflicts with its own Available write; Topovol writes both with
 * resourceVersion preconditions, and the claim that gets a new volume ends as upstream's would,
 * without waiting for one Available write per pre-existing volume (docs/divergences.md).
 */
export function isUnclaimedPhase(v: PersistentVolume): boolean {
  const phase = v.status?.phase;
  return phase === 'Available' || phase === 'Pending' || phase === undefined || phase === '';
}

/** VolumeAttributesClass names (KEP-3751), unset and "" alike. */
export const claimVac = (c: PersistentVolumeClaim): string => c.spec?.volumeAttributesClassName ?? '';
export const volumeVac = (v: PersistentVolume): string => v.spec?.volumeAttributesClassName ?? '';

/**
 * Why a volume cannot serve a claim that names it (spec.volumeName), or undefined when it can: the
 * checks and messages of upstream's checkVolumeSatisfyClaim (pv_controller.go), in its order, so
 * VolumeMismatch Events read the same.
 */
export function volumeMismatch(claim: PersistentVolumeClaim, volume: PersistentVolume): string | undefined {
  if (volume.metadata?.deletionTimestamp) return `the volume is marked for deletion "${volume.metadata.name}"`;
  const want = requestedBytes(claim);
  const have = capacityBytes(volume);
  if (want === undefined) return 'claim has no valid storage request';
  if (have === undefined) return 'volume has no valid capacity';
  // Upstream compares Quantity.Value() here, rounded up to whole bytes (matching compares exactly).
  if (have < want) return 'requested PV is too small';
  if (volumeClass(volume) !== claimClass(claim)) return 'storageClassName does not match';
  if (volumeVac(volume) !== claimVac(claim)) return 'volumeAttributesClassName does not match';
  if (volumeVolumeMode(volume) !== claimVolumeMode(claim)) return 'incompatible volumeMode';
  if (!accessModesSatisfied(claim, volume)) return 'incompatible accessMode';
  return undefined;
}
