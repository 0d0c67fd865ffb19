// Names from upstream that Topovol's loops read or write, in one place, so that a reader finds every
// use of one by its constant: the PV controller's annotations and the external-provisioning
// protocol (k8s.io/component-helpers/storage/volume/helpers.go and pv_helpers.go), well-known labels
// (k8s.io/api/core/v1/well_known_labels.go) and external-provisioner's capacity labels.

// Claim and volume annotations of the binder and the provisioning protocol.
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** Set by kube-scheduler on a WaitForFirstConsumer claim; removed by the provisioner to reschedule. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
/** The beta name of ANN_STORAGE_PROVISIONER: upstream still sets both and reads either. */
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
export const ANN_DYNAMICALLY_PROVISIONED = 'pv.kubernetes.io/provisioned-by';
/** Set on a PV by CSI migration: an external CSI driver handles it (the binder stands down on reclaim). */
export const ANN_MIGRATED_TO = 'pv.kubernetes.io/migrated-to';
/** The claim's capacity while a filesystem resize is pending (pkg/volume/util/resize_util.go). */
export const ANN_PRE_RESIZE_CAPACITY = 'volume.alpha.kubernetes.io/pre-resize-capacity';

// Storage classes.
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
export const ANN_IS_DEFAULT_CLASS = 'storageclass.kubernetes.io/is-default-class';
export const ANN_BETA_IS_DEFAULT_CLASS = 'storageclass.beta.kubernetes.io/is-default-class';
/** The provisioner that means "no dynamic provisioning" (local volumes). */
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';
/** How in-tree volume plugins' names begin ("kubernetes.io/gce-pd"); Topovol carries none of them. */
export const IN_TREE_PLUGIN_PREFIX = 'kubernetes.io/';
/** The in-tree deletion-protection finalizer on PVs, which a CSI deleter never removes. */
export const IN_TREE_PV_FINALIZER = 'kubernetes.io/pv-controller';

// Topology labels of nodes and volumes; the beta ones are what KEP-490's zonal upgrade converts.
export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
export const LABEL_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_REGION = 'topology.kubernetes.io/region';
export const LABEL_BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
export const LABEL_BETA_REGION = 'failure-domain.beta.kubernetes.io/region';

// The labels of external-provisioner's CSIStorageCapacity objects (pkg/capacity), so that tools
// that look for them find ours.
export const LABEL_CSI_DRIVER_NAME = 'csi.storage.k8s.io/drivername';
export const LABEL_CSI_MANAGED_BY = 'csi.storage.k8s.io/managed-by';

/**
 * The entry a kubelet reports in Node.status.volumesInUse for a CSI volume: the CSI plugin's name,
 * then the driver and the volume handle joined by "^" (pkg/volume/csi/csi_plugin.go GetVolumeName,
 * pkg/volume/util/volumehelper GetUniqueVolumeName).
 */
export function csiVolumeInUseName(driver: string, volumeHandle: string): string {
  return `kubernetes.io/csi/${driver}^${volumeHandle}`;
}

/**
 * The field selector of the provisioner's failure Events on claims. Loops that watch them use this
 * one string, so that in one process they share one informer.
 */
export const PROVISIONING_FAILED_EVENTS = 'involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed';

/**
 * The field selector of the provisioner's per-attempt Events on claims (evidence that provisioning
 * is under way): the binder's informer and its live read of one claim's Events use this one string.
 */
export const PROVISIONING_EVENTS = 'involvedObject.kind=PersistentVolumeClaim,reason=Provisioning';
