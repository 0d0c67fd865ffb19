import type { PersistentVolume, Pod, VolumeAttachment } from '@topovol/shared';
import type { ProvisioningRollback } from './intent/provisioning-rollback.js';
import { ANN_PROVISIONED_FOR_NODE, usageOf } from './marks.js';
import { historyKeyOfRecord } from './workload.js';

// The rollback loop's informer indexes. Module functions, not closures made per set-up: addIndex
// accepts an index added again (a second loop, a restarted one) only as the same function.

export const podByUid = (p: Pod): string[] => (p.metadata?.uid ? [p.metadata.uid] : []);

/** Volumes by the `namespace/name` of their claim. */
export const volumeByClaim = (v: PersistentVolume): string[] => (v.spec?.claimRef?.name ? [`${v.spec.claimRef.namespace}/${v.spec.claimRef.name}`] : []);

export function volumeByProvisionedForNode(v: PersistentVolume): string[] {
  const n = v.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE];
  return n ? [n] : [];
}

/** Only the volumes marked unused, under the one value `unused`. */
export const volumeIfUnused = (v: PersistentVolume): string[] => (usageOf(v) === 'unused' ? ['unused'] : []);

export const attachmentByVolume = (a: VolumeAttachment): string[] => (a.spec?.source?.persistentVolumeName ? [a.spec.source.persistentVolumeName] : []);

export const rollbackByHistory = (r: ProvisioningRollback): string[] => (r.spec ? [historyKeyOfRecord(r)] : []);

/** Rollbacks by the `namespace/name` of each claim they re-create. */
export const rollbackByClaim = (r: ProvisioningRollback): string[] => (r.spec ? r.spec.claims.map((c) => `${r.spec.pod.namespace}/${c.name}`) : []);
