import type { PersistentVolumeClaim, StorageClass } from '../types/wire.js';
import { ANN_BETA_STORAGE_CLASS } from './well-known.js';

/** The claim's class: the legacy beta annotation first, else spec.storageClassName; "" = class-less (GetPersistentVolumeClaimClass, k8s.io/component-helpers/storage/volume). */
export function claimClass(c: PersistentVolumeClaim): string {
  return c.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS] ?? c.spec?.storageClassName ?? '';
}

/** Whether the class binds on first consumer (volumeBindingMode WaitForFirstConsumer); a class not known does not. */
export function isDelayedBinding(sc: StorageClass | undefined): boolean {
  return sc?.volumeBindingMode === 'WaitForFirstConsumer';
}
