import type { PersistentVolume } from '@topovol/shared';

/**
 * Topovol's rollback marks on PersistentVolumes (the volume-provisioning-rollback proposal's open
 * question "label PV or PVC?" settled: the PV, which outlives a recreated claim). Documented in
 * docs/rollback.md and protected by the ValidatingAdmissionPolicy in config/admission.
 *
 * - label `rollback.topovol.io/usage`: `unused` when the controller saw the volume provisioned for
 *   a pod that never ran; `used` (permanent) once there is any evidence a pod may have written it.
 * - annotation `rollback.topovol.io/provisioned-for-node`: the selected node it was provisioned for.
 * - annotation `rollback.topovol.io/provisioned-for-pod`: uid of the pod whose scheduling
 *   triggered the provisioning.
 * - annotation `rollback.topovol.io/provisioned-for-workload`: uid of that pod's controller (or of
 *   the pod itself), so that a replacement pod of the same workload can be helped too.
 */
export const LABEL_USAGE = 'rollback.topovol.io/usage';
export const ANN_PROVISIONED_FOR_NODE = 'rollback.topovol.io/provisioned-for-node';
export const ANN_PROVISIONED_FOR_POD = 'rollback.topovol.io/provisioned-for-pod';
export const ANN_PROVISIONED_FOR_WORKLOAD = 'rollback.topovol.io/provisioned-for-workload';
/**
 * On a claim a rollback kept after it may have sent the claim's delete: the rollback's name and a
 * random suffix (`<name>/<8 hex digits>`). The write that sets it changes the claim's
 * resourceVersion (the suffix makes sure it changes something: RollbackActuator.fenceClaim), so a
 * delete still on its way (a request that outlived its timeout, an old leader's) fails its
 * precondition instead of landing after the claim was recorded Kept.
 */
export const ANN_KEPT_BY = 'rollback.topovol.io/kept-by';
/**
 * On a volume whose claim a rollback deletes: the reclaim policy (`Delete`) the rollback set aside
 * for `Retain` right before the claim's delete, to give back once the claim is gone and no pod can
 * have used the volume meanwhile (held-volume.ts). A pod the scheduler binds between the rollback's
 * last check and the delete starts on the claim while it terminates (the kubelet admits a claim
 * being deleted that still has its kubernetes.io/pvc-protection finalizer, which that pod keeps),
 * and what it writes must outlive the claim.
 */
export const ANN_RECLAIM_HELD = 'rollback.topovol.io/reclaim-policy-held';
/** On a volume a rollback left `Retain` instead of giving its `Delete` back: why it may hold data. */
export const ANN_RETAINED_BECAUSE = 'rollback.topovol.io/retained-because';
/** Set by the bind to the usage evidence, for `kubectl describe`. */
export const ANN_USED_BECAUSE = 'rollback.topovol.io/used-because';

export type Usage = 'unused' | 'used' | undefined;

export function usageOf(v: PersistentVolume): Usage {
  const u = v.metadata?.labels?.[LABEL_USAGE];
  return u === 'unused' || u === 'used' ? u : undefined;
}

export const Reasons = {
  MarkedUnused: 'VolumeMarkedUnused',
  MarkedUsed: 'VolumeMarkedUsed',
  MarkRefused: 'VolumeMarkRefused',
  RollbackStarted: 'ProvisioningRollback',
  ClaimRecreated: 'ClaimRecreated',
  ClaimRecreateFailed: 'ClaimRecreateFailed',
  ClaimAdopted: 'ClaimAdopted',
  RollbackRefused: 'ProvisioningRollbackRefused',
  RollbackAborted: 'ProvisioningRollbackAborted',
  RollbackLimit: 'ProvisioningRollbackLimit',
  RollbackRaced: 'ProvisioningRollbackRaced',
  RollbackWriteRefused: 'ProvisioningRollbackWriteRefused',
  VolumeRetained: 'ProvisioningRollbackVolumeRetained',
  RollbackCompleted: 'ProvisioningRollbackCompleted',
} as const;
