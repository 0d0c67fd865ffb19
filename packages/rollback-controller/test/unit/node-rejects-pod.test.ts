import { expect } from 'chai';
import type { Node, Pod, Toleration } from '@topovol/shared';
import { nodeRejectsPod } from '../../src/rollback/node-rejects-pod.js';

const podTolerating = (...tolerations: Toleration[]): Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], tolerations } });

describe('rollback: whether a node can still take the pod', function () {
  it('gone, cordoned, or an untolerated NoSchedule/NoExecute taint: rejected, with the reason', function () {
    const pod = podTolerating({ key: 'ok', operator: 'Exists' });
    const node = (spec: Node['spec']): Node => ({ metadata: { name: 'a' }, spec });
    expect(nodeRejectsPod('a', undefined, pod)).to.equal('node a was deleted');
    expect(nodeRejectsPod('a', node({ unschedulable: true }), pod)).to.equal('node a is cordoned');
    expect(nodeRejectsPod('a', node({ taints: [{ key: 'disk', value: 'full', effect: 'NoExecute' }] }), pod)).to.equal('node a has taint disk=full:NoExecute that the pod does not tolerate');
    expect(nodeRejectsPod('a', node({ taints: [{ key: 'disk', effect: 'NoSchedule' }] }), pod)).to.equal('node a has taint disk:NoSchedule that the pod does not tolerate');
  });

  it('tolerated taints and PreferNoSchedule do not reject', function () {
    const pod = podTolerating({ key: 'ok', operator: 'Exists' });
    const node: Node = { metadata: { name: 'a' }, spec: { taints: [{ key: 'ok', effect: 'NoExecute' }, { key: 'soft', effect: 'PreferNoSchedule' }] } };
    expect(nodeRejectsPod('a', node, pod)).to.equal(undefined);
    expect(nodeRejectsPod('a', { metadata: { name: 'a' } }, podTolerating())).to.equal(undefined);
  });
});
