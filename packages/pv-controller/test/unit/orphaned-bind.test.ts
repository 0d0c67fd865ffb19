import { expect } from 'chai';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { orphanedBind } from '../../src/binder/orphaned-bind.js';
import { claim, pod, vol, world } from './world-fixture.js';

// A claimRef just written on a free volume, read against the claim the server has after the
// claim's own write failed (orphaned-bind.ts): taken back only when no claim waits with it.
describe('pv-binder: a binding whose claim went while it was written', function () {
  const c = claim('c', '1Gi', { uid: 'u1' });
  const bound = vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete', claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'ns', name: 'c', uid: 'u1' } });
  const deleting = (x: PersistentVolumeClaim): PersistentVolumeClaim => ({ ...x, metadata: { ...x.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] } });
  const cases: { name: string; server: PersistentVolumeClaim | undefined; pods?: ReturnType<typeof pod>[]; want: string | undefined }[] = [
    { name: 'the claim is gone: taken back', server: undefined, want: 'the claim is gone' },
    { name: 'a claim of the same name with another uid: taken back', server: claim('c', '1Gi', { uid: 'u2' }), want: 'the claim was deleted and created again' },
    { name: 'the claim is being deleted and no pod uses it: taken back', server: deleting(c), want: 'the claim is being deleted' },
    { name: 'the claim is being deleted and only a pod waiting for the scheduler uses it: taken back', server: deleting(c), pods: [pod('p', 'c')], want: 'the claim is being deleted' },
    { name: 'the claim is being deleted and a pod placed on a node uses it: kept (the kubelet starts it; as upstream)', server: deleting(c), pods: [pod('p', 'c', 'n1')], want: undefined },
    { name: 'the claim is bound to another volume: taken back', server: claim('c', '1Gi', { uid: 'u1', volumeName: 'other' }), want: 'the claim is bound to volume other' },
    { name: 'the claim recorded this binding: kept, even while being deleted', server: deleting(claim('c', '1Gi', { uid: 'u1', volumeName: 'v' })), want: undefined },
    { name: 'the claim is there, unchanged in what matters (a Conflict on another field): kept, the retry completes the binding', server: c, want: undefined },
  ];
  for (const t of cases) {
    it(t.name, function () {
      expect(orphanedBind(bound, t.server, world({ pods: t.pods }))).to.equal(t.want);
    });
  }
  it('a volume without a claimRef (the write did not land) is left alone', function () {
    expect(orphanedBind(vol('v', '1Gi'), undefined, world())).to.equal(undefined);
  });
});
