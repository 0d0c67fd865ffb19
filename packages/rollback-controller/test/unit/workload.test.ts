import { expect } from 'chai';
import type { Pod } from '@topovol/shared';
import { historyKeyOfPod, rollbackName } from '../../src/rollback/workload.js';

const pod = (name: string, owner?: { kind: string; uid: string }): Pod => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: 'w', uid: owner.uid, controller: true }] } : {}) },
});

describe('rollback history key: whose rollbacks count together', function () {
  it('a StatefulSet replica has its own history; other workloads share one across their pods', function () {
    expect(historyKeyOfPod(pod('web-0', { kind: 'StatefulSet', uid: 'sts' }))).to.not.equal(historyKeyOfPod(pod('web-1', { kind: 'StatefulSet', uid: 'sts' })));
    expect(historyKeyOfPod(pod('a-1', { kind: 'ReplicaSet', uid: 'rs' }))).to.equal(historyKeyOfPod(pod('a-2', { kind: 'ReplicaSet', uid: 'rs' })));
  });

  it('a forged owner uid cannot name another workload\'s history (the API server does not check its form)', function () {
    const victim = pod('web-0', { kind: 'StatefulSet', uid: 'sts' });
    const forged = pod('evil', { kind: 'ReplicaSet', uid: 'sts/web-0' });
    expect(historyKeyOfPod(forged)).to.not.equal(historyKeyOfPod(victim));
    expect(rollbackName(historyKeyOfPod(forged), 1)).to.not.equal(rollbackName(historyKeyOfPod(victim), 1));
    // Nor through the namespace part.
    const otherNs: Pod = { metadata: { name: 'x', namespace: 'ns/sts', uid: 'u', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'w', uid: 'web-0', controller: true }] } };
    expect(historyKeyOfPod(otherNs)).to.not.equal(historyKeyOfPod(victim));
  });
});
