import { expect } from 'chai';
import type { PersistentVolume } from '@topovol/shared';
import { VolumeIndex } from '../../src/binder/volume-index.js';
import { isFreeVolume, newlyOffered } from '../../src/binder/volume-offer.js';
import { ref } from './decision-summary.js';
import { node, vol } from './world-fixture.js';

// The binder's candidate indexes (VolumeIndex) under the changes a mutation run found no unit test
// held. findBestVolume re-checks every candidate it is given, so what matters here is what the
// index must never lose or misorder: a volume it leaves out is one no claim can get.

const zone = (z: string): NonNullable<PersistentVolume['spec']>['nodeAffinity'] => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: [z] }] }] },
});

function indexOf(volumes: PersistentVolume[], nodes = [node('n-a', { zone: 'a' })]): VolumeIndex {
  const index = new VolumeIndex();
  for (const n of nodes) index.upsertNode(n);
  for (const v of volumes) index.upsertVolume(v);
  return index;
}

describe('VolumeIndex: edges a mutation run found untested', function () {
  describe('volumes pre-bound to one claim', function () {
    // findByClaim (pkg/controller/volume/persistentvolume/index.go) sees every volume whose claimRef
    // names the claim; one of several going away must not hide the others.
    const two = (): PersistentVolume[] => [vol('v1', '1Gi', { claimRef: ref('c') }), vol('v2', '1Gi', { claimRef: ref('c') })];
    const changes: [string, (index: VolumeIndex) => void][] = [
      ['the other is deleted', (index) => index.deleteVolume('v1')],
      ['the other is pre-bound elsewhere', (index) => index.upsertVolume(vol('v1', '1Gi', { claimRef: ref('d') }))],
      ['the other loses its claimRef', (index) => index.upsertVolume(vol('v1', '1Gi'))],
    ];
    for (const [what, change] of changes) {
      it(`one stays listed when ${what}`, function () {
        const index = indexOf(two());
        change(index);
        expect(index.preBoundTo('ns', 'c')).to.deep.equal(['v2']);
      });
    }

    it('the last one going leaves none listed, and a new one is listed again', function () {
      const index = indexOf(two());
      index.deleteVolume('v1');
      index.deleteVolume('v2');
      expect(index.preBoundTo('ns', 'c')).to.deep.equal([]);
      index.upsertVolume(vol('v3', '1Gi', { claimRef: ref('c') }));
      expect(index.preBoundTo('ns', 'c')).to.deep.equal(['v3']);
    });
  });

  describe('node-affine volumes and nodes', function () {
    // A node the informer delivers after a volume was bound or deleted must not meet that volume again.
    const gone: [string, (index: VolumeIndex) => void][] = [
      ['deleted', (index) => index.deleteVolume('near')],
      ['bound', (index) => index.upsertVolume(vol('near', '1Gi', { nodeAffinity: zone('a'), claimRef: ref('c', { uid: 'uid-c' }), phase: 'Bound' }))],
    ];
    for (const [what, change] of gone) {
      it(`a node added after a node-affine volume was ${what}: no error, and the volume is not offered`, function () {
        const index = indexOf([vol('near', '1Gi', { nodeAffinity: zone('a') })]);
        change(index);
        expect(() => index.upsertNode(node('n-a2', { zone: 'a' }))).not.to.throw();
        expect([...index.freeVolumesForNode('', 'RWO', 'n-a2', 0n)]).to.deep.equal([]);
        expect(index.freeCount).to.equal(0);
      });
    }

    it('volumes without node affinity are reachable from a node the index has not been told of yet', function () {
      // The node informer's cache is read by the binder before its handler has fed the index.
      const index = indexOf([vol('plain', '1Gi'), vol('near', '1Gi', { nodeAffinity: zone('a') })]);
      expect([...index.freeVolumesForNode('', 'RWO', 'unknown', 0n)]).to.deep.equal(['plain']);
    });

    it('a node-affine volume is offered to the nodes it can reach, known before or after it', function () {
      const index = indexOf([vol('near', '2Gi', { nodeAffinity: zone('a') }), vol('plain', '1Gi')], [node('n-a', { zone: 'a' }), node('n-b', { zone: 'b' })]);
      index.upsertNode(node('n-a2', { zone: 'a' }));
      index.upsertNode(node('n-b2', { zone: 'b' }));
      for (const n of ['n-a', 'n-a2']) expect([...index.freeVolumesForNode('', 'RWO', n, 0n)], n).to.deep.equal(['plain', 'near']);
      for (const n of ['n-b', 'n-b2']) expect([...index.freeVolumesForNode('', 'RWO', n, 0n)], n).to.deep.equal(['plain']);
    });

    it('a node relabelled is offered what its new labels reach, no longer what its old ones did', function () {
      const index = indexOf([vol('near', '2Gi', { nodeAffinity: zone('a') })], [node('n-a', { zone: 'a' }), node('n-b', { zone: 'b' })]);
      index.upsertNode(node('n-a', { zone: 'b' }));
      index.upsertNode(node('n-b', { zone: 'a' }));
      expect([...index.freeVolumesForNode('', 'RWO', 'n-a', 0n)]).to.deep.equal([]);
      expect([...index.freeVolumesForNode('', 'RWO', 'n-b', 0n)]).to.deep.equal(['near']);
    });

    it('a node deleted and added again is not offered a volume deleted meanwhile', function () {
      const index = indexOf([vol('near', '2Gi', { nodeAffinity: zone('a') })]);
      index.deleteNode('n-a');
      index.deleteVolume('near');
      index.upsertNode(node('n-a', { zone: 'a' }));
      expect([...index.freeVolumesForNode('', 'RWO', 'n-a', 0n)]).to.deep.equal([]);
    });
  });

  it('node-affine and unconstrained free volumes come merged, smallest first, then by name', function () {
    const index = indexOf([
      vol('g-3', '3Gi'),
      vol('a-5', '5Gi', { nodeAffinity: zone('a') }),
      vol('g-1', '1Gi'),
      vol('b-2', '2Gi', { nodeAffinity: zone('a') }),
      vol('a-2', '2Gi'),
      vol('c-2', '2Gi', { nodeAffinity: zone('a') }),
      vol('a-1', '1Gi', { nodeAffinity: zone('a') }),
    ]);
    const want = ['a-1', 'g-1', 'a-2', 'b-2', 'c-2', 'g-3', 'a-5'];
    expect([...index.freeVolumes('', 'RWO', 0n)], 'any node').to.deep.equal(want);
    expect([...index.freeVolumesForNode('', 'RWO', 'n-a', 0n)], 'node n-a').to.deep.equal(want);
    expect([...index.freeVolumes('', 'RWO', 2n * 1024n ** 3n)], 'at least 2Gi').to.deep.equal(want.slice(2));
  });

  it('a volume with no valid capacity (only from an object written before validation) is not indexed as free', function () {
    const index = indexOf([vol('zero', '0'), vol('bad', 'lots'), vol('ok', '1Gi')]);
    expect(index.freeCount).to.equal(1);
    expect([...index.freeVolumes('', 'RWO', 1n)]).to.deep.equal(['ok']);
  });

  // A volume being deleted is never free (FindMatchingVolume skips it): not indexed, wakes no claim.
  it('a volume being deleted is not free, not indexed, and its arrival wakes no waiting claim', function () {
    const dying = vol('dying', '1Gi', { deleting: true });
    expect(isFreeVolume(dying)).to.equal(false);
    expect(indexOf([dying]).freeCount).to.equal(0);
    expect(newlyOffered(undefined, dying)).to.equal(false);
  });

  it('labels or annotations written as {} where they were absent offer nothing new', function () {
    const bare = vol('v', '1Gi');
    expect(newlyOffered(bare, { ...bare, metadata: { ...bare.metadata, labels: {}, annotations: {} } })).to.equal(false);
  });
});
