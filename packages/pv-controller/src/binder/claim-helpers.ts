import { ANN_BETA_IS_DEFAULT_CLASS, ANN_BETA_STORAGE_CLASS, ANN_IS_DEFAULT_CLASS } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';

export { claimClass, isDelayedBinding } from '@topovol/shared';

/** Whether the claim asked for no class at all (nil), which the default class may fill in. */
export function claimClassUnset(c: PersistentVolumeClaim): boolean {
  return c.spec?.storageClassName === undefined && c.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS] === undefined;
}

export function volumeClass(v: PersistentVolume): string {
  return v.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS] ?? v.spec?.storageClassName ?? '';
}

/** nil volumeMode means Filesystem on both sides. */
export const claimVolumeMode = (c: PersistentVolumeClaim): string => c.spec?.volumeMode ?? 'Filesystem';
export const volumeVolumeMode = (v: PersistentVolume): string => v.spec?.volumeMode ?? 'Filesystem';

export function claimKey(c: PersistentVolumeClaim): string {
  return `${c.metadata?.namespace}/${c.metadata?.name}`;
}

export function isDefaultClass(sc: StorageClass): boolean {
  const a = sc.metadata?.annotations ?? {};
  return a[ANN_IS_DEFAULT_CLASS] === 'true' || a[ANN_BETA_IS_DEFAULT_CLASS] === 'true';
}

/**
 * The default class as upstream picks it when several are marked: the newest, then by name
 * (pkg/volume/util/storageclass GetDefaultClass).
 */
export function pickDefaultClass(classes: StorageClass[]): StorageClass | undefined {
  return classes
    .filter(isDefaultClass)
    .sort((a, b) => (b.metadata?.creationTimestamp ?? '').localeCompare(a.metadata?.creationTimestamp ?? '') || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))[0];
}
