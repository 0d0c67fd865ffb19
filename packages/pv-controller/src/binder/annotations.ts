// Annotation names of the upstream PV controller and the external-provisioning protocol
// (k8s.io/component-helpers/storage/volume/helpers.go and pv_helpers.go), so that Topovol can
// replace kube-controller-manager's binder without anything else noticing.
export { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER } from '@topovol/shared';
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
export { ANN_DYNAMICALLY_PROVISIONED } from '@topovol/shared';
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
export const ANN_IS_DEFAULT_CLASS = 'storageclass.kubernetes.io/is-default-class';
export const ANN_BETA_IS_DEFAULT_CLASS = 'storageclass.beta.kubernetes.io/is-default-class';
/** Set on a PV by CSI migration: an external CSI driver handles it (the binder stands down on reclaim). */
export const ANN_MIGRATED_TO = 'pv.kubernetes.io/migrated-to';
/** The claim's capacity while a filesystem resize is pending (pkg/volume/util/resize_util.go). */
export const ANN_PRE_RESIZE_CAPACITY = 'volume.alpha.kubernetes.io/pre-resize-capacity';
/** The provisioner that means "no dynamic provisioning" (local volumes). */
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

// Event reasons of the upstream binder (pkg/controller/volume/events/event.go).
export const Reasons = {
  FailedBinding: 'FailedBinding',
  VolumeMismatch: 'VolumeMismatch',
  ClaimLost: 'ClaimLost',
  ClaimMisbound: 'ClaimMisbound',
  ExternalProvisioning: 'ExternalProvisioning',
  WaitForFirstConsumer: 'WaitForFirstConsumer',
  WaitForPodScheduled: 'WaitForPodScheduled',
  VolumeFailedRecycle: 'VolumeFailedRecycle',
  VolumeFailedDelete: 'VolumeFailedDelete',
  VolumeUnknownReclaimPolicy: 'VolumeUnknownReclaimPolicy',
  ProvisioningFailed: 'ProvisioningFailed',
  // Topovol's own, for the cases upstream leaves stuck.
  SelectedNodeNotAllowed: 'SelectedNodeNotAllowed',
  SelectedNodeGone: 'SelectedNodeGone',
  SelectedNodeStale: 'SelectedNodeStale',
  NodeNameBypassedScheduler: 'ScheduledWithoutScheduler',
  NodeNameNotAllowed: 'NodeNotAllowedByStorageClass',
  UnusableVolume: 'UnusableVolume',
  UnknownBindingMode: 'UnknownVolumeBindingMode',
} as const;
