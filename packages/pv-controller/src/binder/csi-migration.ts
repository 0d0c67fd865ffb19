import { ANN_BETA_STORAGE_PROVISIONER, ANN_DYNAMICALLY_PROVISIONED, ANN_MIGRATED_TO, ANN_STORAGE_PROVISIONER, IN_TREE_PV_FINALIZER } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';

/**
 * In-tree provisioners whose volumes CSI drivers serve since CSI migration went GA (KEP-625), with
 * their drivers: k8s.io/csi-translation-lib/plugins, and the plugins kube-controller-manager
 * v1.37 reports as migrated (pkg/volume/csimigration IsMigrationEnabledForPlugin).
 */
const MIGRATED: Readonly<Record<string, string>> = {
  'kubernetes.io/aws-ebs': 'ebs.csi.aws.com',
  'kubernetes.io/gce-pd': 'pd.csi.storage.gke.io',
  'kubernetes.io/azure-disk': 'disk.csi.azure.com',
  'kubernetes.io/azure-file': 'file.csi.azure.com',
  'kubernetes.io/cinder': 'cinder.csi.openstack.org',
  'kubernetes.io/vsphere-volume': 'csi.vsphere.vmware.com',
  'kubernetes.io/portworx-volume': 'pxd.portworx.com',
};

/** The CSI driver that serves an in-tree provisioner's volumes, if it was migrated. */
export function migratedDriver(provisioner: string | undefined): string | undefined {
  return provisioner === undefined ? undefined : MIGRATED[provisioner];
}

/** The provisioner name external provisioners answer to for a class: the CSI driver's, for a migrated in-tree one. */
export function externalProvisionerName(provisioner: string): string {
  return migratedDriver(provisioner) ?? provisioner;
}

export interface AnnotationChange {
  set?: Record<string, string>;
  remove?: string[];
}

/** pv.kubernetes.io/migrated-to as it should be, given who provisions (or provisioned) the object. */
function migratedTo(annotations: Record<string, string> | undefined, provisioner: string | undefined): AnnotationChange | undefined {
  if (provisioner === undefined) return undefined;
  const want = migratedDriver(provisioner);
  const have = annotations?.[ANN_MIGRATED_TO];
  if (want !== undefined) return have === want ? undefined : { set: { [ANN_MIGRATED_TO]: want } };
  return have ? { remove: [ANN_MIGRATED_TO] } : undefined;
}

/** The claim's migrated-to annotation, as upstream's updateClaimMigrationAnnotations keeps it. */
export function claimMigrationChange(c: PersistentVolumeClaim): AnnotationChange | undefined {
  const ann = c.metadata?.annotations;
  return migratedTo(ann, ann?.[ANN_STORAGE_PROVISIONER] ?? ann?.[ANN_BETA_STORAGE_PROVISIONER]);
}

/**
 * The volume's migrated-to annotation and, for a migrated provisioner, the in-tree finalizer gone,
 * as upstream's updateVolumeMigrationAnnotationsAndFinalizers: the CSI driver then deletes it. The
 * finalizers of volumes of in-tree plugins that were not migrated are left alone: Topovol has no
 * in-tree plugin that could finish their deletion.
 */
export function volumeMigrationChange(v: PersistentVolume): (AnnotationChange & { removeFinalizers?: string[] }) | undefined {
  const provisioner = v.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  const change: AnnotationChange & { removeFinalizers?: string[] } = migratedTo(v.metadata?.annotations, provisioner) ?? {};
  if (migratedDriver(provisioner) !== undefined && (v.metadata?.finalizers ?? []).includes(IN_TREE_PV_FINALIZER)) change.removeFinalizers = [IN_TREE_PV_FINALIZER];
  return change.set || change.remove || change.removeFinalizers ? change : undefined;
}
