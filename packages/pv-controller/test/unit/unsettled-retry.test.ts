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
  const cases: [string, BinderAction[], ReturnType<typeof vol> | undefined, string[]][] = [
    ['nothing pending: the plan as decided', binds(other), undefined, ['bindVolume a0', 'bindClaim a0']],
    ['the plan binds the pending volume: as decided', binds(written), written, ['bindVolume v1', 'bindClaim v1']],
    ['the plan binds another volume: the pending one instead, both writes', binds(other), written, ['bindVolume v1', 'bindClaim v1']],
    ['the plan binds nothing (a wait): as decided', [{ kind: 'requeueAfter', ms: 1000 }], written, ['requeueAfter 1000']],
  ];
  for (const [name, plan, pending, want] of cases) it(name, () => expect(summary(retryUnsettledVolume(plan, pending))).to.deep.equal(want));

  it('the retried write is the one made before: at the version the cache shows, marked bound by the controller', function () {
    const [bind] = retryUnsettledVolume(binds(other), written);
    expect(bind).to.include({ kind: 'bindVolume', volume: written, boundByController: true });
  });
});
