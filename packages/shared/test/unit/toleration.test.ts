import { expect } from 'chai';
import { tolerates, untoleratedTaint } from '../../src/selectors/toleration.js';
import type { Taint, Toleration } from '../../src/selectors/toleration.js';

describe('tolerations and taints', function () {
  // v1 toleration semantics (k8s.io/api/core/v1 toleration.go ToleratesTaint).
  it('tolerations match taints as the scheduler and the kubelet match them', function () {
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

  it('untoleratedTaint: the first taint of the given effects that no toleration tolerates', function () {
    const node = { metadata: { name: 'n' }, spec: { taints: [{ key: 'a', effect: 'NoSchedule' }, { key: 'b', effect: 'NoExecute' }] } };
    const pod = (tolerations: Toleration[]) => ({ metadata: { name: 'p' }, spec: { containers: [], tolerations } });
    expect(untoleratedTaint(pod([]), node, ['NoExecute'])?.key).to.equal('b');
    expect(untoleratedTaint(pod([{ key: 'b', operator: 'Exists' }]), node, ['NoExecute'])).to.equal(undefined);
    expect(untoleratedTaint(pod([{ key: 'b', operator: 'Exists' }]), node, ['NoSchedule', 'NoExecute'])?.key).to.equal('a');
  });
});
