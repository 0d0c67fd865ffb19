import { expect } from 'chai';
import { LABEL_CSI_MANAGED_BY } from '@topovol/shared';
import type { CSIStorageCapacity, StorageClass } from '@topovol/shared';
import { loopConditions } from '../../src/aggregate/loop-conditions.js';
import { externalProvisionerManagedBy, otherPublisherProblems, otherPublishersSelector } from '../../src/objects/other-publishers.js';

describe('other publishers of a driver\'s capacity', function () {
  it('central: every object of the driver managed by someone else, cluster-wide', function () {
    expect(otherPublishersSelector({ driverName: 'd.example.com', managedBy: 'topovol', base: 'topovol' })).to.equal('csi.storage.k8s.io/drivername=d.example.com,csi.storage.k8s.io/managed-by!=topovol');
  });

  it('per node: only the publishers that cover its node (central external-provisioner, its instance on this node, a central Topovol)', function () {
    expect(otherPublishersSelector({ driverName: 'd', managedBy: 'topovol-n1', base: 'topovol', nodeName: 'n1' })).to.equal(
      'csi.storage.k8s.io/drivername=d,csi.storage.k8s.io/managed-by in (external-provisioner,external-provisioner-n1,topovol)',
    );
    // external-provisioner shortens a value past 63 characters; the shortened one is looked for.
    const long = 'ip-10-0-12-34.eu-west-1.compute.internal.example.com';
    expect(otherPublishersSelector({ driverName: 'd', managedBy: 'x', base: 'topovol', nodeName: long })).to.equal(
      `csi.storage.k8s.io/drivername=d,csi.storage.k8s.io/managed-by in (external-provisioner,e-53f40b57-${long},topovol)`,
    );
  });

  // Expected values printed by getNameWithMaxLength("external-provisioner", node, 63) of
  // external-provisioner v6.3.0 (cmd/csi-provisioner/util.go), run with Go on these node names.
  const upstream: [string, string][] = [
    ['n1', 'external-provisioner-n1'],
    ['a'.repeat(42), `external-provisioner-${'a'.repeat(42)}`],
    ['b'.repeat(43), `external-p-53f40b57-${'b'.repeat(43)}`],
    ['ip-10-0-12-34.eu-west-1.compute.internal.example.com', 'e-53f40b57-ip-10-0-12-34.eu-west-1.compute.internal.example.com'],
    ['c'.repeat(52), `e-53f40b57-${'c'.repeat(52)}`],
    ['d'.repeat(53), 'external-provisioner-7345255e'],
    ['e'.repeat(70), 'external-provisioner-2603e358'],
  ];
  for (const [node, want] of upstream) {
    it(`names external-provisioner's instance on node ${node.slice(0, 16)}… (${node.length} characters) as it does itself`, function () {
      expect(externalProvisionerManagedBy(node)).to.equal(want);
      expect(want.length).to.be.at.most(63);
    });
  }

  it('one Warning per class, on the target given for the class, naming the publishers and namespaces', function () {
    const obj = (cls: string, by: string, ns: string): CSIStorageCapacity => ({ metadata: { name: `o-${cls}-${by}`, namespace: ns, labels: { [LABEL_CSI_MANAGED_BY]: by } }, storageClassName: cls });
    const fast: StorageClass = { metadata: { name: 'fast' }, provisioner: 'd' };
    const problems = otherPublisherProblems('d', [obj('fast', 'external-provisioner', 'kube-system'), obj('fast', 'external-provisioner-n1', 'csi'), obj('gone', 'external-provisioner', 'kube-system')], (n) => (n === 'fast' ? fast : undefined));
    expect(problems.map((p) => [p.target?.metadata?.name, p.reason, p.id])).to.deep.equal([
      ['fast', 'OtherCapacityPublisher', 'other-publisher\u0000fast'],
      [undefined, 'OtherCapacityPublisher', 'other-publisher\u0000gone'],
    ]);
    expect(problems[0]!.message).to.match(/^2 CSIStorageCapacity object\(s\) of driver d for class fast are also published by external-provisioner, external-provisioner-n1 \(namespace csi, kube-system\)/);
  });

  it('the central status says SolePublisher, False with the managers and namespaces while another publisher writes objects of the driver', function () {
    const health = { total: 1, measured: 1, problems: [] };
    const obj = (by: string, ns: string): CSIStorageCapacity => ({ metadata: { name: `o-${by}`, namespace: ns, labels: { [LABEL_CSI_MANAGED_BY]: by } }, storageClassName: 'fast' });
    expect(loopConditions(health).map((c) => c.type), 'not watched: no condition').to.deep.equal(['Ready', 'PoolsCoverDomains']);
    const alone = loopConditions({ ...health, others: { driverName: 'd', objects: [] } })[2]!;
    expect(alone).to.include({ type: 'SolePublisher', status: 'True', reason: 'NoOtherPublisher' });
    const two = loopConditions({ ...health, others: { driverName: 'd', objects: [obj('external-provisioner', 'kube-system'), obj('topovol-2', 'ops'), obj('external-provisioner', 'kube-system')] } })[2]!;
    expect(two).to.include({ type: 'SolePublisher', status: 'False', reason: 'OtherCapacityPublisher' });
    expect(two.message).to.match(/^CSIStorageCapacity objects of driver d are also published by external-provisioner, topovol-2 \(namespace kube-system, ops\)/);
  });
});
