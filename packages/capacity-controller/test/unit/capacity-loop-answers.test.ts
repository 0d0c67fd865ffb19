import { expect } from 'chai';
import { KubeApiError, metricsRegistry, Resources } from '@topovol/shared';
import type { StorageClass } from '@topovol/shared';
import { CsiError, GrpcStatus } from '@topovol/shared/csi';
import { STATUS, SYNC } from '../../src/capacity-key.js';
import { csiNode, DRIVER, fakeLoop, GiB, MIN_REFRESH_MS, node, NODE_KEY, publishedFigures, pv, sc } from './capacity-loop-fixtures.js';

/** The classes a `topovol_capacity_available_bytes` series exists for. */
async function availableSeriesClasses(): Promise<string[]> {
  const m = metricsRegistry.getSingleMetric('topovol_capacity_available_bytes');
  const values = m ? (await m.get()).values : [];
  return values.map((v) => String(v.labels.storage_class));
}

/**
 * What becomes of each GetCapacity answer (fake informers, store and meter; the test moves the
 * clock): it reaches the objects even while changes keep coming, it is dropped for an item that
 * went away during its call, and a driver without GetCapacity is asked once per backoff period.
 */
describe('CapacityLoop: each answer lands where it belongs', function () {
  it('a volume event during every call does not hold the objects at their first figure: each answer is published', async function () {
    const { queue, meter, store, inf, loop } = fakeLoop();
    let made = 0;
    // Volumes keep coming, one during each call: the item is dirty whenever an answer lands.
    meter.during = () => inf.volumes.set(pv(`churn-${made++}`));
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('busy'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    for (let round = 1; round <= 5; round++) {
      const figure = BigInt(20 - round) * GiB;
      meter.answer = { available: figure };
      queue.advance(MIN_REFRESH_MS);
      await queue.drain(loop.reconcile);
      expect(publishedFigures(store), `round ${round}`).to.deep.equal([['busy', figure]]);
    }
    // One call per --capacity-min-refresh-interval while the changes last, as before.
    expect(meter.calls.length).to.be.at.most(7);
  });

  it('a class made again under its name with other parameters: the aggregated status drops the old figure until the new parameters are answered', async function () {
    const { queue, meter, inf, loop, statusEntries, statusConditions } = fakeLoop();
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('c'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity])).to.deep.equal([['c', '10Gi']]);
    // Replaced with another pool's parameters; the driver slow to answer for them.
    const release = meter.hold();
    // The same figure for the new parameters: the status must still hear of it.
    meter.answer = { available: 10n * GiB };
    inf.classes.set({ ...sc('c'), metadata: { name: 'c', uid: 'again' }, parameters: { type: 'ssd' } });
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    queue.add(STATUS);
    await queue.drain(loop.reconcile);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity]), 'not the old parameters\' figure').to.deep.equal([]);
    expect(statusConditions().find((c) => c.type === 'Ready')?.status, 'not Ready while its figure is missing').to.equal('False');
    release();
    // No status key queued by hand, no clock moved: the answer's landing queues it.
    await queue.drain(loop.reconcile);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity])).to.deep.equal([['c', '10Gi']]);
    expect(statusConditions().find((c) => c.type === 'Ready')?.status).to.equal('True');
  });

  it('an answer that lands after its item went away leaves no metric series behind', async function () {
    const { queue, meter, inf, loop } = fakeLoop();
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    const gone: StorageClass = { ...sc('answer-after-delete'), parameters: { type: 'gone' } };
    inf.classes.set(gone);
    const release = meter.hold();
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    expect(meter.calls).to.have.length(1);
    inf.classes.remove(gone);
    await queue.drain(loop.reconcile);
    release();
    await queue.drain(loop.reconcile);
    expect(await availableSeriesClasses()).to.not.include('answer-after-delete');
  });

  it('a driver without GetCapacity: the segments of one set of class parameters count as one Unimplemented, and each backoff period costs one call', async function () {
    const { queue, meter, store, inf, loop } = fakeLoop();
    meter.failure = new CsiError('GetCapacity', GrpcStatus.UNIMPLEMENTED, 'unknown service csi.v1.Controller');
    // Ten segments (a node each), more than the loop's four call slots; one class.
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    for (const n of names) {
      inf.nodes.set({ metadata: { name: n, labels: { [NODE_KEY]: n } } });
      inf.csiNodes.set({ metadata: { name: n }, spec: { drivers: [{ name: DRIVER, nodeID: n, topologyKeys: [NODE_KEY] }] } });
    }
    inf.classes.set(sc('c'));
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    const atStart = meter.calls.length;
    expect(atStart, 'calls waiting for a slot when the verdict came are not made').to.be.at.most(4);

    // --capacity-unimplemented-retry's default: 10 minutes, then 20.
    queue.advance(10 * 60_000);
    await queue.drain(loop.reconcile);
    queue.advance(1_000);
    await queue.drain(loop.reconcile);
    expect(meter.calls.length - atStart, 'one call after the first period').to.equal(1);
    queue.advance(20 * 60_000 - 1_000);
    await queue.drain(loop.reconcile);
    queue.advance(1_000);
    await queue.drain(loop.reconcile);
    expect(meter.calls.length - atStart, 'one more after the second').to.equal(2);

    // The driver upgraded in place: the next period's call answers, and every segment is published.
    meter.failure = undefined;
    queue.advance(40 * 60_000);
    for (let i = 0; i < 5; i++) {
      await queue.drain(loop.reconcile);
      queue.advance(1_000);
    }
    await queue.drain(loop.reconcile);
    expect(publishedFigures(store)).to.have.length(10);
  });

  // The Warning goes on the CSIDriver, which every class shares: once while any set of parameters is
  // held, not once per class (a driver without GetCapacity would repeat it for each).
  it('a driver without GetCapacity for two classes: one GetCapacityUnimplemented Warning while any is held; again once all ended and one is held anew', async function () {
    const { queue, meter, store, inf, loop, events } = fakeLoop();
    store.seed(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DRIVER } });
    const unimplemented = new CsiError('GetCapacity', GrpcStatus.UNIMPLEMENTED, 'no capacity here');
    meter.failure = unimplemented;
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set({ ...sc('one'), parameters: { type: 'one' } });
    inf.classes.set({ ...sc('two'), parameters: { type: 'two' } });
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    // warnOnDriver reads the CSIDriver first: let that read answer.
    await new Promise((r) => setImmediate(r));
    const warnings = (): string[] => events.filter((e) => e.reason === 'GetCapacityUnimplemented').map((e) => `${e.kind}/${e.name}`);
    expect(meter.calls.map((c) => c.parameters.type).sort(), 'both sets asked').to.deep.equal(['one', 'two']);
    expect(warnings(), 'one Warning, on the driver').to.deep.equal([`CSIDriver/${DRIVER}`]);
    // The driver upgraded in place: both verdicts end at the next period's calls.
    meter.failure = undefined;
    queue.advance(20 * 60_000);
    for (let i = 0; i < 3; i++) {
      await queue.drain(loop.reconcile);
      queue.advance(1_000);
    }
    expect(publishedFigures(store).map(([c]) => c)).to.deep.equal(['one', 'two']);
    // Rolled back to a version without it: held anew, said anew.
    meter.failure = unimplemented;
    inf.volumes.set(pv('made'));
    queue.advance(MIN_REFRESH_MS);
    for (let i = 0; i < 3; i++) {
      await queue.drain(loop.reconcile);
      queue.advance(1_000);
    }
    await new Promise((r) => setImmediate(r));
    expect(warnings()).to.deep.equal([`CSIDriver/${DRIVER}`, `CSIDriver/${DRIVER}`]);
  });

  // A per-node instance whose --capacity-node-name names no Node publishes nothing; it used to say
  // nothing either (no log line, no Event, no metric): an operator saw only missing objects.
  it('per node, a --capacity-node-name naming no Node: an error, one CapacityNodeNotFound Warning on the CSIDriver and topovol_capacity_node_missing 1 until the Node exists', async function () {
    const { queue, store, inf, loop, events } = fakeLoop(undefined, { onlyNode: 'n1' });
    store.seed(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DRIVER } });
    const missing = async (): Promise<number | undefined> => (await metricsRegistry.getSingleMetric('topovol_capacity_node_missing')?.get())?.values.find((v) => v.labels.driver === DRIVER)?.value;
    const warnings = (): string[] => events.filter((e) => e.reason === 'CapacityNodeNotFound').map((e) => `${e.kind}/${e.name}: ${e.message}`);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('fast'));
    for (let i = 0; i < 3; i++) {
      queue.add(SYNC);
      await queue.drain(loop.reconcile);
    }
    await new Promise((r) => setImmediate(r));
    expect(publishedFigures(store), 'nothing to publish').to.deep.equal([]);
    expect(warnings(), 'said once, on the driver').to.deep.equal([`CSIDriver/${DRIVER}: --capacity-node-name=n1 names no Node: this per-node capacity instance publishes no CSIStorageCapacity objects until a Node of that name exists (set the flag from the pod's spec.nodeName through the downward API)`]);
    expect(await missing()).to.equal(1);
    inf.nodes.set(node);
    await queue.drain(loop.reconcile);
    expect(publishedFigures(store)).to.deep.equal([['fast', 10n * GiB]]);
    expect(await missing()).to.equal(0);
    expect(warnings()).to.have.length(1);
  });

  // The aggregated status's writes refused (a policy, a webhook, a missing or older CRD): they went to
  // the work queue's doubling backoff with no Event, while the status kept saying Ready=True.
  it('status writes the API server refuses: one CapacityStatusRefused Warning on the CSIDriver and topovol_capacity_status_writes_denied 1 while they last, retried at the status refresh', async function () {
    const { queue, store, inf, loop, events, statusFailure, statusEntries } = fakeLoop();
    store.seed(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DRIVER } });
    const denied = async (): Promise<number | undefined> => (await metricsRegistry.getSingleMetric('topovol_capacity_status_writes_denied')?.get())?.values.find((v) => v.labels.driver === DRIVER)?.value;
    const warnings = (): string[] => events.filter((e) => e.reason === 'CapacityStatusRefused').map((e) => `${e.kind}/${e.name}`);
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('fast'));
    statusFailure.err = new KubeApiError(403, { reason: 'Forbidden', message: 'csidrivercapacities.topovol.io "x" is forbidden: User "u" cannot update resource "csidrivercapacities/status"' });
    queue.add(SYNC);
    for (let i = 0; i < 3; i++) {
      queue.add(STATUS);
      await queue.drain(loop.reconcile);
    }
    await new Promise((r) => setImmediate(r));
    expect(warnings(), 'said once, on the driver').to.deep.equal([`CSIDriver/${DRIVER}`]);
    expect(await denied()).to.equal(1);
    // Looked at again at the status refresh (20 s here), by itself: no hand-added key.
    statusFailure.err = undefined;
    queue.advance(20_000);
    await queue.drain(loop.reconcile);
    expect(await denied()).to.equal(0);
    expect(statusEntries().map((e) => e.storageClassName)).to.deep.equal(['fast']);
    // A prune that lost its race to the per-node writers too often ends in a failed JSON patch test,
    // which the API server answers 422 as it would a refusal: not one, it goes to the work queue.
    statusFailure.pruneErr = new KubeApiError(422, { reason: 'Invalid', message: 'the server rejected our request due to an error in our request' });
    queue.add(STATUS);
    const pruned = await queue.drain(loop.reconcile).then(() => 'settled', (e: unknown) => (e as KubeApiError).code);
    await new Promise((r) => setImmediate(r));
    expect([pruned, await denied(), warnings().length]).to.deep.equal([422, 0, 1]);
    statusFailure.pruneErr = undefined;
    // Refused anew after it was allowed: said anew.
    statusFailure.err = new KubeApiError(422, { reason: 'Invalid', message: 'ValidatingAdmissionPolicy denied request' });
    queue.add(STATUS);
    await queue.drain(loop.reconcile);
    await new Promise((r) => setImmediate(r));
    expect(warnings()).to.have.length(2);
  });

  it('Unimplemented for one class\'s parameters only: the other classes\' figures keep being refreshed and published', async function () {
    const { queue, meter, store, inf, loop, statusEntries, statusConditions } = fakeLoop();
    // One kind of pool the driver measures, another it does not.
    meter.failureFor = (parameters) => (parameters.type === 'remote' ? new CsiError('GetCapacity', GrpcStatus.UNIMPLEMENTED, 'no capacity for remote pools') : undefined);
    inf.nodes.set(node);
    inf.csiNodes.set(csiNode);
    inf.classes.set(sc('good'));
    inf.classes.set({ ...sc('remote'), parameters: { type: 'remote' } });
    meter.answer = { available: 10n * GiB };
    queue.add(SYNC);
    await queue.drain(loop.reconcile);
    expect(publishedFigures(store)).to.deep.equal([['good', 10n * GiB]]);
    // A volume made on the pool: good's figure must follow within --capacity-min-refresh-interval.
    meter.answer = { available: 4n * GiB };
    inf.volumes.set(pv('made'));
    queue.advance(MIN_REFRESH_MS);
    await queue.drain(loop.reconcile);
    queue.advance(1_000);
    await queue.drain(loop.reconcile);
    expect(publishedFigures(store), 'good refreshed while remote is held Unimplemented').to.deep.equal([['good', 4n * GiB]]);
    // The aggregated status renews good's figure (no measuredAtMs: its expiry moves with each
    // publish), as for a driver that answers; a held verdict for other parameters does not age it.
    queue.add(STATUS);
    await queue.drain(loop.reconcile);
    expect(statusEntries().map((e) => [e.storageClassName, e.capacity, e.measuredAtMs])).to.deep.equal([['good', '4Gi', undefined]]);
    // The condition names the class held, not the driver as a whole.
    const ready = statusConditions().find((c) => c.type === 'Ready');
    expect([ready?.status, ready?.reason, ready?.message]).to.deep.equal(['False', 'GetCapacityUnimplemented', 'StorageClass remote: CSI GetCapacity failed: UNIMPLEMENTED: no capacity for remote pools']);
    // remote is asked once per period, not at every change.
    const remoteCalls = meter.calls.filter((c) => c.parameters.type === 'remote').length;
    expect(remoteCalls).to.equal(1);
  });
});
