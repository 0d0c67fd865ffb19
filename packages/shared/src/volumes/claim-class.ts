import type { PersistentVolumeClaim } from '../types/wire.js';
import { ANN_BETA_STORAGE_CLASS } from './well-known.js';

/** The claim's class: the legacy beta annotation first, else spec.storageClassName; "" = class-less (GetPersistentVolumeClaimClass, k8s.io/component-helpers/storage/volume). */
export function claimClass(c: PersistentVolumeClaim): string {
  return c.metadata?.annotations?.[ANN_BETA_STORAGE_CLASS] ?? c.spec?.storageClassName ?? '';
}
