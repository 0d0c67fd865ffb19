import { expect } from 'chai';
import type { Node, Pod } from '@topovol/shared';
import { tolerates } from '@topovol/shared';
import { nodeRejectsPod } from '../../src/rollback/node-rejects-pod.js';

type Taint = NonNullable<NonNullable<Node['spec']>['taints']>[number];
type Toleration = NonNullable<NonNullable<Pod['spec']>['tolerations']>[number];

const podTolerating = (...tolerations: Toleration[]): Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], tolerations } });

describe('rollback: whether a node can still take the pod', function () {
  // v1 toleration semantics (k8s.io/api/core/v1 toleration.go ToleratesTaint).
  it('tolerations match taints as the scheduler matches them', function () {
    const cases: [string, Toleration, Taint, boolean][] = [
      ['Exists without a key tolerates everything', { operator: 'Exists' }, { key: 'k', value: 'v', effect: 'NoExecute' }, true],
      ['Exists with a key: any value of that key', { key: 'k', operator: 'Exists' }, { key: 'k', value: 'v', effect: 'NoSchedule' }, true],
      ['Exists with another key', { key: 'other', operator: 'Exists' }, { key: 'k', effect: 'NoSchedule' }, false],
      ['Equal is the default operator', { key: 'k', value: 'v' }, { key: 'k', value: 'v', effect: 'NoSchedule' }, true],
      ['Equal with another value', { key: 'k', operator: 'Equal', value: 'w' }, { key: 'k', value: 'v', effect: 'NoSchedule' }, false],
      ['Equal without a value matches an empty value', { key: 'k', operator: 'Equal' }, { key: 'k', effect: 'NoSchedule' }, true],
      ['an effect limits the match to that effect', { key: 'k', operator: 'Exists', effect: 'NoSchedule' }, { key: 'k', effect: 'NoExecute' }, false],
      ['no effect matches every effect', { key: 'k', operator: 'Exists' }, { key: 'k', effect: 'NoExecute' }, true],
      ['an unknown operator tolerates nothing', { key: 'k', operator: 'Gt', value: 'v' }, { key: 'k', value: 'v', effect: 'NoSchedule' }, false],
    ];
    for (const [what, t, taint, want] of cases) expect(tolerates(t, taint), what).to.equal(want);
  });

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
