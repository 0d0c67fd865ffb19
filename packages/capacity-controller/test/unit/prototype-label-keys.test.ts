import { expect } from 'chai';
import type { CSINode, Node, PersistentVolume } from '@topovol/shared';
import { itemCoversNode } from '../../src/objects/failure-refresh.js';
import { volumeAffectsItem } from '../../src/objects/volume-affects-item.js';
import { parseConstrainedPools } from '../../src/pools/topology-constrained-pools.js';
import { computeSegments } from '../../src/segments/compute-segments.js';
import { unsegmentedNodes } from '../../src/segments/unsegmented-nodes.js';

// `constructor`, `toString`, `valueOf` and `hasOwnProperty` are valid label keys; indexed directly,
// a parsed JSON object without them reads Object.prototype's members (labelValue in
// packages/shared/src/selectors/label-selector.ts). Ceph-CSI reads domainSegments into a Go map,
// external-provisioner node labels likewise: neither sees such a key where it is not.
const KEYS = ['constructor', 'toString', 'valueOf', 'hasOwnProperty'];
const node = (name: string, labels: Record<string, string>): Node => ({ metadata: { name, labels } });
const csiNode = (name: string, keys: string[]): CSINode => ({ metadata: { name }, spec: { drivers: [{ name: 'd', nodeID: name, topologyKeys: keys }] } });

describe('capacity: label keys named like Object.prototype members', function () {
  for (const key of KEYS) {
    it(`"${key}": a pool's domain label given once is accepted`, function () {
      const got = parseConstrainedPools({ topologyConstrainedPools: JSON.stringify([{ poolName: 'p', domainSegments: [{ domainLabel: key, value: 'v' }] }]) });
      expect(got).to.deep.equal({ pools: [{ name: 'p', domain: { [key]: 'v' } }] });
      const twice = parseConstrainedPools({ topologyConstrainedPools: JSON.stringify([{ poolName: 'p', domainSegments: [{ domainLabel: key, value: 'v' }, { domainLabel: key, value: 'w' }] }]) });
      expect(twice).to.have.property('error').that.contains('given twice');
    });

    it(`"${key}": a node without the label has no segment of it, and says why`, function () {
      const nodes = [node('with', { [key]: 'a' }), node('without', {})];
      const csi = (name: string): CSINode => csiNode(name, [key]);
      expect(computeSegments({ kind: 'csinode' }, nodes, csi, 'd')).to.deep.equal([{ [key]: 'a' }]);
      expect(computeSegments({ kind: 'domains', labels: [key], anyNode: true }, nodes, csi, 'd')).to.deep.equal([{ [key]: 'a' }]);
      expect(unsegmentedNodes({ kind: 'csinode' }, nodes, csi, 'd').map((u) => u.node.metadata?.name)).to.deep.equal(['without']);
    });

    it(`"${key}": an item whose segment lacks the key is covered and affected as any other`, function () {
      const item = { storageClassName: 'c', segment: { zone: 'a' }, pool: '', absent: [key] };
      expect(itemCoversNode(item, { zone: 'a' })).to.equal(true);
      expect(itemCoversNode(item, { zone: 'a', [key]: 'x' })).to.equal(false);
      const pv = { spec: { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values: ['x'] }] }] } } } } as PersistentVolume;
      // The item's segment does not say: the volume may be on its nodes (the safe side).
      expect(volumeAffectsItem(pv, item)).to.equal(true);
    });
  }
});
