import { expect } from 'chai';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimMigrationChange, externalProvisionerName, migratedDriver, volumeMigrationChange } from '../../src/binder/csi-migration.js';

// CSI migration (KEP-625): which in-tree provisioners a CSI driver now serves
// (k8s.io/csi-translation-lib/plugins), and the migrated-to annotation and in-tree finalizer as
// upstream's updateMigrationAnnotations (pkg/controller/volume/persistentvolume/pv_controller.go)
// keeps them. A plugin missing here leaves its volumes to no deleter.

const MIGRATED: [string, string][] = [
  ['kubernetes.io/aws-ebs', 'ebs.csi.aws.com'],
  ['kubernetes.io/gce-pd', 'pd.csi.storage.gke.io'],
  ['kubernetes.io/azure-disk', 'disk.csi.azure.com'],
  ['kubernetes.io/azure-file', 'file.csi.azure.com'],
  ['kubernetes.io/cinder', 'cinder.csi.openstack.org'],
  ['kubernetes.io/vsphere-volume', 'csi.vsphere.vmware.com'],
  ['kubernetes.io/portworx-volume', 'pxd.portworx.com'],
];
const MIGRATED_TO = 'pv.kubernetes.io/migrated-to';
const claimWith = (annotations: Record<string, string>): PersistentVolumeClaim => ({ metadata: { name: 'c', namespace: 'ns', annotations }, spec: {} });
const volumeWith = (annotations: Record<string, string>, finalizers?: string[]): PersistentVolume => ({ metadata: { name: 'v', annotations, ...(finalizers ? { finalizers } : {}) }, spec: {} });

describe('CSI migration: edges a mutation run found untested', function () {
  for (const [plugin, driver] of MIGRATED) {
    it(`${plugin} is served by ${driver}`, function () {
      expect(migratedDriver(plugin)).to.equal(driver);
      expect(externalProvisionerName('example.com/csi'), 'a CSI driver answers to its own name').to.equal('example.com/csi');
      expect(externalProvisionerName(plugin)).to.equal(driver);
      expect(claimMigrationChange(claimWith({ 'volume.kubernetes.io/storage-provisioner': plugin }))).to.deep.equal({ set: { [MIGRATED_TO]: driver } });
      expect(volumeMigrationChange(volumeWith({ 'pv.kubernetes.io/provisioned-by': plugin }, ['kubernetes.io/pv-controller']))).to.deep.equal({ set: { [MIGRATED_TO]: driver }, removeFinalizers: ['kubernetes.io/pv-controller'] });
    });
  }

  it('a claim with only the beta storage-provisioner annotation is annotated too; the GA one wins when both are set', function () {
    expect(claimMigrationChange(claimWith({ 'volume.beta.kubernetes.io/storage-provisioner': 'kubernetes.io/gce-pd' }))).to.deep.equal({ set: { [MIGRATED_TO]: 'pd.csi.storage.gke.io' } });
    expect(claimMigrationChange(claimWith({ 'volume.kubernetes.io/storage-provisioner': 'example.com/csi', 'volume.beta.kubernetes.io/storage-provisioner': 'kubernetes.io/gce-pd' }))).to.equal(undefined);
  });

  it('a volume already annotated keeps its in-tree finalizer removal only; one of a CSI driver loses a stale annotation and keeps its finalizers', function () {
    expect(volumeMigrationChange(volumeWith({ 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/aws-ebs', [MIGRATED_TO]: 'ebs.csi.aws.com' }, ['kubernetes.io/pv-controller']))).to.deep.equal({ removeFinalizers: ['kubernetes.io/pv-controller'] });
    expect(volumeMigrationChange(volumeWith({ 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/aws-ebs', [MIGRATED_TO]: 'ebs.csi.aws.com' }))).to.equal(undefined);
    expect(volumeMigrationChange(volumeWith({ 'pv.kubernetes.io/provisioned-by': 'example.com/csi', [MIGRATED_TO]: 'x' }, ['kubernetes.io/pv-controller']))).to.deep.equal({ remove: [MIGRATED_TO] });
    expect(volumeMigrationChange(volumeWith({ 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/aws-ebs' }))).to.deep.equal({ set: { [MIGRATED_TO]: 'ebs.csi.aws.com' } });
    expect(volumeMigrationChange(volumeWith({}, ['kubernetes.io/pv-controller']))).to.equal(undefined);
    // Statically provisioned (no provisioned-by): upstream changes nothing, whatever it carries.
    expect(volumeMigrationChange(volumeWith({ [MIGRATED_TO]: 'ebs.csi.aws.com' }))).to.equal(undefined);
    expect(claimMigrationChange(claimWith({ [MIGRATED_TO]: 'ebs.csi.aws.com' }))).to.equal(undefined);
  });
});
