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
  InvalidClaimRef: 'InvalidClaimRef',
  UnknownBindingMode: 'UnknownVolumeBindingMode',
  SecondBinder: 'SecondBinderRunning',
} as const;
