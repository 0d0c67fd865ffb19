import { expect } from 'chai';
import type { PersistentVolume, Pod, VolumeAttachment } from '@topovol/shared';
import { volumeInUseEntry } from '@topovol/testing';
import { podMayHaveRun, usedEvidence, volumesInUseMentions } from '../../src/rollback/usage-evidence.js';
import { claim, pod, pv, world } from './rollback-world-fixture.js';

type ContainerStatus = NonNullable<NonNullable<Pod['status']>['containerStatuses']>[number];
const status = (over: Partial<ContainerStatus>): ContainerStatus => ({ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, ...over });

describe('rollback: evidence that a volume may hold data', function () {
  it('a pod may have run once Running or later, or once any container started', function () {
    const cases: [string, Pod['status'], boolean][] = [
      ['Pending, nothing started', { phase: 'Pending' }, false],
      ['Pending, waiting for an image', { phase: 'Pending', containerStatuses: [status({ state: { waiting: { reason: 'ImagePullBackOff' } } })] }, false],
      ['Running', { phase: 'Running' }, true],
      ['Succeeded', { phase: 'Succeeded' }, true],
      ['Failed', { phase: 'Failed' }, true],
      ['no phase yet, a container started', { containerStatuses: [status({ started: true })] }, true],
      ['Pending, an init container running', { phase: 'Pending', initContainerStatuses: [status({ state: { running: {} } })] }, true],
      ['Pending, restarted after terminating', { phase: 'Pending', containerStatuses: [status({ state: { waiting: {} }, lastState: { terminated: { exitCode: 1 } } })] }, true],
    ];
    for (const [what, st, want] of cases) expect(podMayHaveRun({ metadata: { name: 'p' }, status: st }), what).to.equal(want);
  });

  it('volumesInUse names a CSI volume as the kubelet writes it, an in-tree one by its PV name', function () {
    const csi: PersistentVolume = { metadata: { name: 'pv-1' }, spec: { csi: { driver: 'csi.example.com', volumeHandle: 'vol-42' } } };
    expect(volumesInUseMentions(volumeInUseEntry(csi), csi)).to.equal(true);
    expect(volumesInUseMentions('kubernetes.io/csi/csi.example.com^vol-43', csi)).to.equal(false);
    expect(volumesInUseMentions('kubernetes.io/csi/other.example.com^vol-42', csi)).to.equal(false);
    const inTree: PersistentVolume = { metadata: { name: 'pv-1' }, spec: {} };
    expect(volumesInUseMentions('kubernetes.io/gce-pd/pv-1', inTree)).to.equal(true);
    expect(volumesInUseMentions('kubernetes.io/gce-pd/pv-10', inTree)).to.equal(false);
    expect(volumesInUseMentions('kubernetes.io/gce-pd/pv-1', { metadata: {}, spec: {} })).to.equal(false);
  });

  it('evidence, most telling first: a pod of its own claim that ran, a node using it, an attachment', function () {
    const v = pv('pv-1', 'c1');
    const attachment: VolumeAttachment = { metadata: { name: 'va-1' }, spec: { attacher: 'csi.example.com', nodeName: 'a', source: { persistentVolumeName: 'pv-1' } } };
    expect(usedEvidence(v, world({ claims: [claim('c1', { volume: 'pv-1' })], pods: [pod('p', ['c1'], { phase: 'Pending' })] }))).to.equal(undefined);
    expect(usedEvidence(v, world({ claims: [claim('c1', { volume: 'pv-1' })], pods: [pod('p', ['c1'], { phase: 'Running' })], inUse: { a: ['pv-1'] } }))).to.equal('pod ns/p using claim c1 has run (phase Running)');
    expect(usedEvidence(v, world({ inUse: { a: ['pv-1'] }, attachments: [attachment] }))).to.equal('node a reports it in status.volumesInUse');
    expect(usedEvidence(v, world({ attachments: [attachment] }))).to.equal('VolumeAttachment va-1 exists for it');
  });

  it('pods name claims, not uids: a running pod of a re-created claim of the same name is no evidence', function () {
    const recreated = { ...claim('c1'), metadata: { ...claim('c1').metadata, uid: 'uid-new' } };
    expect(usedEvidence(pv('pv-1', 'c1'), world({ claims: [recreated], pods: [pod('p', ['c1'], { phase: 'Running' })] }))).to.equal(undefined);
  });
});
