import { tryParseQuantity } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimClass, claimVolumeMode, volumeClass, volumeVolumeMode } from './claim-helpers.js';

/** Every requested access mode must be offered by the volume. */
export function accessModesSatisfied(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  const offered = new Set(volume.spec?.accessModes ?? []);
  return (claim.spec?.accessModes ?? []).every((m) => offered.has(m));
}

export function requestedBytes(claim: PersistentVolumeClaim): number | undefined {
  return tryParseQuantity(claim.spec?.resources?.requests?.storage);
}

export function capacityBytes(volume: PersistentVolume): number | undefined {
  return tryParseQuantity(volume.spec?.capacity?.storage);
}

/**
 * Why a volume cannot serve a claim that names it (spec.volumeName), or undefined when it can;
 * the messages of upstream's checkVolumeSatisfyClaim, used in VolumeMismatch Events.
 */
export function volumeMismatch(claim: PersistentVolumeClaim, volume: PersistentVolume): string | undefined {
  const want = requestedBytes(claim);
  const have = capacityBytes(volume);
  if (want === undefined) return 'claim has no valid storage request';
  if (have === undefined) return 'volume has no valid capacity';
  if (have < want) return 'requested PV is too small';
  if (volumeClass(volume) !== claimClass(claim)) return 'storageClassName does not match';
  if (volumeVolumeMode(volume) !== claimVolumeMode(claim)) return 'incompatible volumeMode';
  if (!accessModesSatisfied(claim, volume)) return 'incompatible accessMode';
  return undefined;
}
