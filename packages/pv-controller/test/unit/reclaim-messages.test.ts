import { expect } from 'chai';
import type { PersistentVolume } from '@topovol/shared';
import type { BinderWorld } from '../../src/binder/binder-world.js';
import { reclaim } from '../../src/binder/reclaim-volume.js';

// kube-controller-manager's VolumeFailedDelete message for a released Delete volume no deleter
// takes, by source (findDeletablePlugin in pkg/controller/volume/persistentvolume/pv_controller.go,
// over the plugins cmd/kube-controller-manager/app/plugins.go loads for it: hostpath and nfs).
describe('reclaim: the VolumeFailedDelete message, as upstream words it for each source', function () {
  const released = (source: NonNullable<PersistentVolume['spec']>): PersistentVolume => ({
    metadata: { name: 'v' },
    spec: { capacity: { storage: '1Gi' }, persistentVolumeReclaimPolicy: 'Delete', claimRef: { namespace: 'ns', name: 'c', uid: 'u' }, ...source },
    status: { phase: 'Released' },
  });
  const world = {} as unknown as BinderWorld;
  const cases: { name: string; spec: NonNullable<PersistentVolume['spec']>; message: string }[] = [
    { name: 'local: no plugin of the binder matches it', spec: { local: { path: '/mnt/disks/1' } }, message: 'error getting deleter volume plugin for volume "v": no volume plugin matched' },
    { name: 'iscsi: probed but neither provisions, deletes nor recycles, so not loaded', spec: { iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'iqn.2001-04.com.example:storage', lun: 0 } }, message: 'error getting deleter volume plugin for volume "v": no volume plugin matched' },
    { name: 'nfs: its plugin recycles but does not delete', spec: { nfs: { server: 'nfs.example', path: '/export' } }, message: 'error getting deleter volume plugin for volume "v": no deletable volume plugin matched' },
    { name: "hostPath outside /tmp: the hostpath deleter's refusal", spec: { hostPath: { path: '/data/v' } }, message: 'host_path deleter only supports /tmp/.+ but received provided /data/v' },
    { name: 'hostPath under /tmp: upstream would remove it, Topovol says it does not', spec: { hostPath: { path: '/tmp/v' } }, message: 'hostPath volume "v" (/tmp/v) not deleted: Topovol deletes no data itself (kube-controller-manager would remove the directory on its own node)' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const actions = reclaim(released(c.spec), world, true);
      expect(actions.map((a) => (a.kind === 'event' ? `${a.type} ${a.reason}: ${a.message}` : a.kind === 'volumePhase' ? `${a.phase}` : a.kind))).to.deep.equal(['Failed', `Warning VolumeFailedDelete: ${c.message}`]);
    });
  }

  it('a CSI volume, or one provisioned by an external provisioner: left to its deleter, no Event', function () {
    expect(reclaim(released({ csi: { driver: 'd', volumeHandle: 'h' } }), world, true)).to.deep.equal([]);
    expect(reclaim({ ...released({ local: { path: '/x' } }), metadata: { name: 'v', annotations: { 'pv.kubernetes.io/provisioned-by': 'ext.example.com' } } }, world, true)).to.deep.equal([]);
  });
});
