import { expect } from 'chai';
import fc from 'fast-check';
import type { Pod } from '@topovol/shared';
import { consumerChanged, nodeChanged } from '../../src/binder/consumer-change.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { build, worldArb } from './world-arbitraries.js';
import { node, pod, world } from './world-fixture.js';

// The binder queues a pod's claims again on a pod update only when consumerChanged. What makes
// skipping the other updates safe: a claim's decision is the same with the pod before and after
// such an update (checked below over random pods and worlds).

type PodState = {
  name: string;
  uid: string;
  claim: string;
  nodeName: string | undefined;
  phase: string | undefined;
  deleting: boolean;
  container: 'none' | 'running' | 'waiting' | 'terminated';
  scheduled: 'none' | 'True' | 'False';
  resourceVersion: string;
  owned: boolean;
  tolerations: boolean;
};

const podStateArb: fc.Arbitrary<PodState> = fc.record({
  name: fc.constantFrom('p', 'q'),
  uid: fc.constantFrom('u1', 'u2'),
  claim: fc.constantFrom('c', 'other'),
  nodeName: fc.constantFrom(undefined, 'n1', 'n2'),
  phase: fc.constantFrom(undefined, 'Pending', 'Running', 'Succeeded', 'Failed'),
  deleting: fc.boolean(),
  container: fc.constantFrom('none', 'running', 'waiting', 'terminated'),
  scheduled: fc.constantFrom('none', 'True', 'False'),
  resourceVersion: fc.constantFrom('1', '2'),
  owned: fc.boolean(),
  tolerations: fc.boolean(),
});

function podOf(s: PodState): Pod {
  const p = pod(s.name, s.claim, s.nodeName);
  const state = s.container === 'none' ? undefined : s.container === 'running' ? { running: {} } : s.container === 'waiting' ? { waiting: { reason: 'ContainerCreating' } } : { terminated: { exitCode: 0 } };
  return {
    ...p,
    metadata: {
      ...p.metadata,
      uid: s.uid,
      resourceVersion: s.resourceVersion,
      deletionTimestamp: s.deleting ? '2026-01-01T00:00:00Z' : undefined,
      ownerReferences: s.owned ? [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'ss', controller: true }] : undefined,
    },
    spec: { ...p.spec!, tolerations: s.tolerations ? [{ key: 'k', operator: 'Exists' }] : undefined },
    status: {
      phase: s.phase,
      conditions: s.scheduled === 'none' ? undefined : [{ type: 'PodScheduled', status: s.scheduled, reason: s.scheduled === 'False' ? 'Unschedulable' : undefined }],
      containerStatuses: state ? [{ name: 'app', image: '', imageID: '', ready: false, restartCount: 0, state }] : undefined,
    },
  };
}

describe('consumerChanged: which pod updates queue the pod claims again', function () {
  const base: PodState = { name: 'p', uid: 'u1', claim: 'c', nodeName: undefined, phase: 'Pending', deleting: false, container: 'none', scheduled: 'none', resourceVersion: '1', owned: false, tolerations: false };
  const cases: [string, Partial<PodState>, Partial<PodState>, boolean][] = [
    ["kube-scheduler's PodScheduled condition only", {}, { scheduled: 'False', resourceVersion: '2' }, false],
    ['a resourceVersion only', {}, { resourceVersion: '2' }, false],
    ['scheduled: nodeName set', {}, { nodeName: 'n1' }, true],
    ['Running to Succeeded', { phase: 'Running', nodeName: 'n1' }, { phase: 'Succeeded', nodeName: 'n1' }, true],
    ['Pending to Running', { nodeName: 'n1' }, { phase: 'Running', nodeName: 'n1' }, false],
    ['deletion starts', { nodeName: 'n1', container: 'running' }, { nodeName: 'n1', container: 'running', deleting: true }, true],
    ['a deleted pod whose last container stops', { nodeName: 'n1', container: 'running', deleting: true }, { nodeName: 'n1', container: 'terminated', deleting: true }, true],
    ['a container restarts, not being deleted', { nodeName: 'n1', container: 'running' }, { nodeName: 'n1', container: 'waiting' }, false],
    ['a pod of the same name, another uid', {}, { uid: 'u2' }, true],
    ['a placed pod gains a toleration (the kubelet may take it now)', { nodeName: 'n1' }, { nodeName: 'n1', tolerations: true }, true],
    ['a placed pod taken by the kubelet (container statuses written)', { nodeName: 'n1' }, { nodeName: 'n1', container: 'waiting' }, true],
  ];
  for (const [name, a, b, want] of cases) {
    it(`${name}: ${want ? 'queues' : 'does not queue'}`, function () {
      expect(consumerChanged(podOf({ ...base, ...a }), podOf({ ...base, ...b }))).to.equal(want);
    });
  }

  it("over random pods and worlds, an update that is not consumerChanged never changes the decision of a claim the pod uses", function () {
    let quiet = 0;
    fc.assert(
      fc.property(podStateArb, podStateArb, fc.record({ phase: fc.boolean(), scheduled: fc.boolean(), container: fc.boolean(), rv: fc.boolean(), owned: fc.boolean(), tol: fc.boolean(), node: fc.boolean(), deleting: fc.boolean() }), worldArb, (a, b, take, w) => {
        // The new pod: the old one with some of its fields taken from another.
        const mixed: PodState = {
          ...a,
          phase: take.phase ? b.phase : a.phase,
          scheduled: take.scheduled ? b.scheduled : a.scheduled,
          container: take.container ? b.container : a.container,
          resourceVersion: take.rv ? b.resourceVersion : a.resourceVersion,
          owned: take.owned ? b.owned : a.owned,
          tolerations: take.tol ? b.tolerations : a.tolerations,
          nodeName: take.node ? b.nodeName : a.nodeName,
          deleting: take.deleting ? b.deleting : a.deleting,
        };
        const old = podOf(a);
        const next = podOf(mixed);
        if (consumerChanged(old, next)) return;
        quiet++;
        const { c, w: input } = build(w);
        // n1's NoExecute taint: whether the kubelet takes a pod placed there reads its tolerations
        // and whether it was taken already (placed-pod-admission.ts).
        const nodes = [{ ...node('n1'), spec: { taints: [{ key: 'k', effect: 'NoExecute' }] } }, node('n2', { zone: 'b' })];
        const before = decideClaim(c, world({ ...input, nodes, pods: [old] }));
        const after = decideClaim(c, world({ ...input, nodes, pods: [next] }));
        expect(after, `${JSON.stringify(old)} -> ${JSON.stringify(next)} for ${JSON.stringify(c)}`).to.deep.equal(before);
      }),
      { numRuns: 5000 },
    );
    // Not vacuous: many updates are status-only (conditions, restarts, resourceVersions).
    expect(quiet, 'updates that queue nothing').to.be.above(1000);
  });
});

describe('nodeChanged: which node updates queue the claims waiting on the node again', function () {
  const n = node('n1', { zone: 'a' });
  it('labels and taints count; anything else does not', function () {
    expect(nodeChanged(n, node('n1', { zone: 'b' })), 'labels').to.equal(true);
    expect(nodeChanged(n, { ...n, spec: { taints: [{ key: 'k', effect: 'NoExecute' }] } }), 'a taint').to.equal(true);
    expect(nodeChanged(n, { ...n, metadata: { ...n.metadata, resourceVersion: '9' }, status: { volumesInUse: ['x'] } }), 'status, resourceVersion').to.equal(false);
  });
});
