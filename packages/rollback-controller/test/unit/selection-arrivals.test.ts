import { expect } from 'chai';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';
import { SelectionArrivals } from '../../src/rollback/selection-arrivals.js';

const SEL = 'volume.kubernetes.io/selected-node';
const claim = (node?: string, uid = 'c'): PersistentVolumeClaim => ({ metadata: { name: 'c', namespace: 'ns', uid, annotations: node ? { [SEL]: node } : {} } });
const failure = (uid: string, lastTimestamp: string, message = 'rpc error: code = ResourceExhausted', extra: Partial<Event> = {}): Event => ({ metadata: { name: uid, uid }, involvedObject: {}, reason: 'ProvisioningFailed', message, lastTimestamp, ...extra });

// The order in which claims' selected nodes and their failures arrive (SelectionArrivals).
describe('SelectionArrivals', function () {
  let live = true;
  let a: SelectionArrivals;
  beforeEach(function () {
    live = true;
    a = new SelectionArrivals(() => live);
  });

  it('a failure seen after the selection is about it; one seen before is not', function () {
    const before = failure('e1', 't1');
    a.failureSeen(before);
    a.claimSeen(claim('a'));
    const after = failure('e2', 't2');
    a.failureSeen(after);
    expect(a.arrivedSinceSelected(claim('a'), before)).to.equal(false);
    expect(a.arrivedSinceSelected(claim('a'), after)).to.equal(true);
  });

  it('a selection made again (another node) makes every earlier failure an earlier attempt\'s', function () {
    a.claimSeen(claim('b'));
    const e = failure('e1', 't1');
    a.failureSeen(e);
    expect(a.arrivedSinceSelected(claim('b'), e)).to.equal(true);
    a.claimSeen(claim());
    a.claimSeen(claim('a'));
    expect(a.arrivedSinceSelected(claim('a'), e)).to.equal(false);
  });

  it('the claim given is read as it is: a failure is not about a node the cache no longer selects', function () {
    a.claimSeen(claim('a'));
    const e = failure('e1', 't1');
    a.failureSeen(e);
    expect(a.arrivedSinceSelected(claim('b'), e)).to.equal(false);
    expect(a.arrivedSinceSelected(claim(), e)).to.equal(false);
  });

  it('the same selection seen again (an update, a relist) keeps its place', function () {
    a.claimSeen(claim('a'));
    const e = failure('e1', 't1');
    a.failureSeen(e);
    a.claimSeen(claim('a'));
    expect(a.arrivedSinceSelected(claim('a'), e)).to.equal(true);
  });

  it('a core/v1 Event repeated (a new lastTimestamp) after a new selection is a new occurrence; unchanged, it is not', function () {
    a.failureSeen(failure('e1', 't1'));
    a.claimSeen(claim('a'));
    a.failureSeen(failure('e1', 't1'));
    expect(a.arrivedSinceSelected(claim('a'), failure('e1', 't1'))).to.equal(false);
    a.failureSeen(failure('e1', 't2'));
    expect(a.arrivedSinceSelected(claim('a'), failure('e1', 't2'))).to.equal(true);
  });

  it('an events.k8s.io series going on (count, lastObservedTime) is no new occurrence: it keeps its first message', function () {
    const first = failure('e1', '', 'rpc error: code = ResourceExhausted', { lastTimestamp: undefined, eventTime: 't0' });
    a.failureSeen(first);
    a.claimSeen(claim('a'));
    a.failureSeen({ ...first, series: { count: 5, lastObservedTime: 't9' } });
    expect(a.arrivedSinceSelected(claim('a'), first)).to.equal(false);
  });

  it('before both caches have listed, everything arrives together: nothing is after the selection', function () {
    live = false;
    a.claimSeen(claim('a'));
    const e = failure('e1', 't1');
    a.failureSeen(e);
    expect(a.arrivedSinceSelected(claim('a'), e)).to.equal(false);
    live = true;
    const later = failure('e2', 't2');
    a.failureSeen(later);
    expect(a.arrivedSinceSelected(claim('a'), later)).to.equal(true);
  });

  it('a failure or claim not seen (or gone) is about nothing; deletes free the memory', function () {
    a.claimSeen(claim('a'));
    const e = failure('e1', 't1');
    expect(a.arrivedSinceSelected(claim('a'), e)).to.equal(false);
    a.failureSeen(e);
    a.claimGone(claim('a'));
    expect(a.arrivedSinceSelected(claim('a'), e)).to.equal(false);
    a.failureGone(e);
    expect(a.size).to.equal(0);
  });
});
