// Names from upstream that several loops read (k8s.io/component-helpers/storage/volume/helpers.go
// and pv_helpers.go, the external-provisioning protocol), in one place.
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** Set by kube-scheduler on a WaitForFirstConsumer claim; removed by the provisioner to reschedule. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const ANN_DYNAMICALLY_PROVISIONED = 'pv.kubernetes.io/provisioned-by';

/**
 * The field selector of the provisioner's failure Events on claims. Loops that watch them use this
 * one string, so that in one process they share one informer.
 */
export const PROVISIONING_FAILED_EVENTS = 'involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed';
