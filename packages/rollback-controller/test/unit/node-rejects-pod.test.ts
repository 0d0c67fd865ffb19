import { expect } from 'chai';
import type { Node, Pod, Toleration } from '@topovol/shared';
import { nodePlacementChanged, nodeRejectsPod } from '../../src/rollback/node-rejects-pod.js';

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

  it('a node update changes where pods may go only when its cordon, its NoSchedule/NoExecute taints or its labels change', function () {
    const node = (spec: Node['spec'], status: Node['status'] = {}): Node => ({ metadata: { name: 'a' }, spec, status });
    const t = (key: string, effect: string, value?: string) => ({ key, effect, value });
    const cases: [string, Node, Node, boolean][] = [
      ['a status heartbeat', node({}, { conditions: [] }), node({}, { volumesInUse: ['x'] }), false],
      ['cordoned', node({}), node({ unschedulable: true }), true],
      ['uncordoned', node({ unschedulable: true }), node({ unschedulable: false }), true],
      ['unschedulable false and absent are the same', node({ unschedulable: false }), node({}), false],
      ['a NoSchedule taint added', node({}), node({ taints: [t('k', 'NoSchedule')] }), true],
      ['a NoExecute taint removed', node({ taints: [t('k', 'NoExecute')] }), node({ taints: [] }), true],
      ['a taint\'s value changed', node({ taints: [t('k', 'NoSchedule', 'a')] }), node({ taints: [t('k', 'NoSchedule', 'b')] }), true],
      ['the same taints in another order', node({ taints: [t('a', 'NoSchedule'), t('b', 'NoExecute')] }), node({ taints: [t('b', 'NoExecute'), t('a', 'NoSchedule')] }), false],
      ['only a PreferNoSchedule taint added', node({}), node({ taints: [t('k', 'PreferNoSchedule')] }), false],
      ['a label added (a zone a volume\'s affinity or a pod\'s nodeSelector asks for)', node({}), { ...node({}), metadata: { name: 'a', labels: { zone: 'z1' } } }, true],
      ['a label\'s value changed', { ...node({}), metadata: { name: 'a', labels: { zone: 'z1' } } }, { ...node({}), metadata: { name: 'a', labels: { zone: 'z2' } } }, true],
      ['the same labels in another order', { ...node({}), metadata: { name: 'a', labels: { a: '1', b: '2' } } }, { ...node({}), metadata: { name: 'a', labels: { b: '2', a: '1' } } }, false],
    ];
    for (const [name, before, after, want] of cases) expect(nodePlacementChanged(before, after), name).to.equal(want);
  });
});
