import { expect } from 'chai';
import { labelValueProblem } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
import { newRollback } from '../../src/rollback/intent/new-rollback.js';
import { historyKeyOfPod, rollbackName } from '../../src/rollback/workload.js';
import { rollbackDecision, thePod } from './rollback-record-fixture.js';
import { NOW } from './rollback-world-fixture.js';

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

describe('the rollback record of a pod whose owner uid is forged', function () {
  // The API server checks an ownerReference's uid only for being non-empty; a label value must be
  // at most 63 characters of [-A-Za-z0-9_.], or the record's create fails with 422 at every retry.
  for (const uid of ['u'.repeat(64), 'sts/web-0', 'has space']) {
    it(`"${uid.slice(0, 20)}": every label value is one the API server accepts, the uid kept in spec.workload`, function () {
      const forged = { ...thePod, metadata: { ...thePod.metadata, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'w', uid, controller: true }] } };
      const r = newRollback(forged, rollbackDecision().pinned, 'node a rejects the pod', 1, NOW);
      for (const v of Object.values(r.metadata?.labels ?? {})) expect(labelValueProblem(v), v).to.equal(undefined);
      expect(r.spec.workload.uid).to.equal(uid);
    });
  }

  it('a real uid is labelled', function () {
    const owned = { ...thePod, metadata: { ...thePod.metadata, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'w', uid: '0b7e9f5c-1f4e-4d7e-9a35-6c1f0c7d2a11', controller: true }] } };
    expect(newRollback(owned, rollbackDecision().pinned, 'x', 1, NOW).metadata?.labels?.['rollback.topovol.io/workload-uid']).to.equal('0b7e9f5c-1f4e-4d7e-9a35-6c1f0c7d2a11');
  });
});
