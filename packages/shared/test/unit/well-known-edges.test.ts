import { expect } from 'chai';
import { csiVolumeInUseName, PROVISIONING_EVENTS, PROVISIONING_FAILED_EVENTS } from '../../src/volumes/well-known.js';

// Names Topovol shares with upstream components, which no unit test pinned down until a mutation
// run changed them: a kubelet's volumesInUse entry for a CSI volume, and the field selectors of
// the provisioner's Events.

describe('well-known names', function () {
  it('a CSI volume in Node.status.volumesInUse is "kubernetes.io/csi/<driver>^<volume handle>" (pkg/volume/csi/csi_plugin.go GetVolumeName)', function () {
    expect(csiVolumeInUseName('hostpath.csi.k8s.io', 'vol-1')).to.equal('kubernetes.io/csi/hostpath.csi.k8s.io^vol-1');
    expect(csiVolumeInUseName('ebs.csi.aws.com', 'vol-0a1b^x')).to.equal('kubernetes.io/csi/ebs.csi.aws.com^vol-0a1b^x');
  });

  it('the provisioner\'s Events on claims are selected by kind and reason (external-provisioner\'s reasons)', function () {
    expect(PROVISIONING_EVENTS).to.equal('involvedObject.kind=PersistentVolumeClaim,reason=Provisioning');
    expect(PROVISIONING_FAILED_EVENTS).to.equal('involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed');
  });
});
