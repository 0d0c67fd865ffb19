import { expect } from 'chai';
import type { BinderAction } from '../../src/binder/actions.js';
import { retryUnsettledVolume } from '../../src/binder/unsettled-retry.js';
import { summary } from './decision-summary.js';
import { claim, vol } from './world-fixture.js';

// Past the read-back hold, a claim retries the volume its unanswered write was for, never another.
describe('retryUnsettledVolume', function () {
  const c = claim('c', '1Gi');
  const written = vol('v1', '1Gi');
  const other = vol('a0', '1Gi');
  const binds = (v: ReturnType<typeof vol>): BinderAction[] => [
    { kind: 'bindVolume', volume: v, claim: c, boundByController: true },
    { kind: 'bindClaim', claim: c, volume: v, boundByController: true },
  ];
  const deleting = { ...c, metadata: { ...c.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
  const named = claim('c', '1Gi', { volumeName: 'a0' });
  const completed = claim('c', '1Gi', { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } });
  const preBound = vol('a0', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } });
  const forPod = (v: ReturnType<typeof vol>): BinderAction[] => binds(v).map((a) => (a.kind === 'bindVolume' ? { ...a, forPlacedPod: { namespace: 'ns', name: 'p', uid: 'uid-p', nodeName: 'n2' } } : a));
  // The plan as decided, never the swap (each has checks of its own, or pending would not fit).
  const kept: [string, BinderAction[], ReturnType<typeof vol>, typeof c][] = [
    ['the claim names a volume (its own decision)', binds(other), written, named],
    ['the claim carries bind-completed (a re-bind of its volume)', binds(other), written, completed],
    ['the claim is being deleted (the server-confirmed hold-back)', binds(other), written, deleting],
    ['a binding for a pod placed on a node (the volume chosen for its node)', forPod(other), written, c],
    ['a volume pre-bound to the claim (its own)', binds(preBound), written, c],
    ['pending no longer fits (another class)', binds(other), vol('v1', '1Gi', { storageClassName: 'gold' }), c],
    ["pending outside the claim's label selector (a claim made again under the name)", binds(other), written, claim('c', '1Gi', { selector: { matchLabels: { tier: 'fast' } } })],
  ];
  for (const [name, plan, pending, cl] of kept) it(`${name}: the plan as decided`, () => expect(retryUnsettledVolume(plan, cl, pending)).to.deep.equal(plan));

  const cases: [string, BinderAction[], ReturnType<typeof vol> | undefined, string[]][] = [
    ['nothing pending: the plan as decided', binds(other), undefined, ['bindVolume a0', 'bindClaim a0']],
    ['the plan binds the pending volume: as decided', binds(written), written, ['bindVolume v1', 'bindClaim v1']],
    ['the plan binds another volume: the pending one instead, both writes', binds(other), written, ['bindVolume v1', 'bindClaim v1']],
    ['the plan binds nothing (a wait): as decided', [{ kind: 'requeueAfter', ms: 1000 }], written, ['requeueAfter 1000']],
  ];
  for (const [name, plan, pending, want] of cases) it(name, () => expect(summary(retryUnsettledVolume(plan, c, pending))).to.deep.equal(want));

  it('the retried write is the one made before: at the version the cache shows, marked bound by the controller', function () {
    const [bind] = retryUnsettledVolume(binds(other), c, written);
    expect(bind).to.include({ kind: 'bindVolume', volume: written, boundByController: true });
  });
});
