import { expect } from 'chai';
import fc from 'fast-check';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';
import { SelectionVersions } from '../../src/rollback/selection-versions.js';

const SEL = 'volume.kubernetes.io/selected-node';
const claim = (node: string | undefined, resourceVersion: string, uid = 'c'): PersistentVolumeClaim => ({ metadata: { name: 'c', namespace: 'ns', uid, resourceVersion, annotations: node ? { [SEL]: node } : {} } });
/** A ProvisioningFailed Event recorded on the copy of claim `uid` at `resourceVersion` (client-go's reference carries it). */
const failure = (resourceVersion: string | undefined, uid = 'c', extra: Partial<Event> = {}): Event => ({ metadata: { name: `e-${resourceVersion}`, uid: `e-${resourceVersion}` }, involvedObject: { kind: 'PersistentVolumeClaim', name: 'c', namespace: 'ns', uid, resourceVersion }, reason: 'ProvisioningFailed', message: 'rpc error: code = ResourceExhausted', ...extra });

// Which selected node of a claim a failure is about: by the claim resourceVersion the provisioner
// recorded it on, not by when either arrived here (SelectionVersions).
describe('SelectionVersions', function () {
  let s: SelectionVersions;
  beforeEach(() => (s = new SelectionVersions()));

  it('a failure recorded on the copy that had the current node is about it; one recorded on an earlier copy is not, whenever it arrives', function () {
    s.claimSeen(claim('b', '10'));
    s.claimSeen(claim(undefined, '12')); // the provisioner gave it back
    s.claimSeen(claim('a', '15')); // the scheduler chose again
    // node b's failure, written (or delivered) only now: recorded on version 10.
    expect(s.failedSinceSelected(claim('a', '15'), failure('10'))).to.equal(false);
    expect(s.failedSinceSelected(claim('a', '15'), failure('15'))).to.equal(true);
    expect(s.failedSinceSelected(claim('a', '17'), failure('16'))).to.equal(true);
  });

  it('a selection seen after the failure on it (the claim watch lagging the Events) still counts it', function () {
    const e = failure('15');
    s.claimSeen(claim('a', '15'));
    expect(s.failedSinceSelected(claim('a', '15'), e)).to.equal(true);
  });

  it('later updates of the claim keep the selection where it was first seen', function () {
    s.claimSeen(claim('a', '15'));
    s.claimSeen(claim('a', '20'));
    expect(s.failedSinceSelected(claim('a', '20'), failure('16'))).to.equal(true);
  });

  it('a claim changed across a relist counts from the relisted version (its node may have been removed and set again meanwhile)', function () {
    s.claimSeen(claim('a', '15'));
    s.claimsRelisted();
    s.claimSeen(claim('a', '30'));
    expect(s.failedSinceSelected(claim('a', '30'), failure('16'))).to.equal(false);
    expect(s.failedSinceSelected(claim('a', '30'), failure('30'))).to.equal(true);
    s.claimSeen(claim('a', '31'));
    expect(s.failedSinceSelected(claim('a', '31'), failure('30')), 'only the first delivery after the relist moves it').to.equal(true);
  });

  it('no comparable resourceVersion, another claim (uid), a node the cache no longer selects, a claim not seen: about nothing', function () {
    s.claimSeen(claim('a', '15'));
    for (const rv of [undefined, '', 'abc', '015']) expect(s.failedSinceSelected(claim('a', '15'), failure(rv)), String(rv)).to.equal(false);
    expect(s.failedSinceSelected(claim('a', '15'), failure('16', 'other'))).to.equal(false);
    expect(s.failedSinceSelected(claim('b', '15'), failure('16'))).to.equal(false);
    expect(s.failedSinceSelected(claim(undefined, '15'), failure('16'))).to.equal(false);
    expect(s.failedSinceSelected(claim('a', '15', 'd'), failure('16', 'd'))).to.equal(false);
  });

  it('gone claims free their entry; a node removed forgets the selection', function () {
    s.claimSeen(claim('a', '15'));
    s.claimSeen(claim('a', '15', 'd'));
    s.claimGone(claim('a', '15', 'd'));
    s.claimSeen(claim(undefined, '16'));
    expect(s.size).to.equal(0);
  });

  it('property: whatever order the claim versions arrive in (a watch, relists), a failure recorded before the current node was set never counts', function () {
    // A history: the claim's node over versions 1..n; the failure recorded at version f.
    const history = fc.array(fc.constantFrom<string | undefined>('a', 'b', undefined), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(history, fc.nat(), fc.array(fc.boolean(), { maxLength: 12 }), (nodes, fRaw, relistBefore) => {
        const sel = new SelectionVersions();
        const f = (fRaw % nodes.length) + 1;
        // The version at which the last node was set: where the current run of equal values begins.
        const last = nodes[nodes.length - 1];
        let setAt = nodes.length;
        while (setAt > 1 && nodes[setAt - 2] === last) setAt--;
        // Delivered in order, some versions skipped (a gap) and followed by a relist.
        nodes.forEach((n, i) => {
          if (relistBefore[i]) sel.claimsRelisted();
          else if (i < nodes.length - 1 && relistBefore[i + 1]) return; // skipped by the gap
          sel.claimSeen(claim(n, String(i + 1)));
        });
        const counted = sel.failedSinceSelected(claim(last, String(nodes.length)), failure(String(f)));
        if (f < setAt || last === undefined) expect(counted).to.equal(false);
      }),
      { numRuns: 500 },
    );
  });
});
