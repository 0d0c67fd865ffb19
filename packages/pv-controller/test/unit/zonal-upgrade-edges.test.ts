import { expect } from 'chai';
import { IndexedCache, logger, metricsRegistry, objectKey, parseManagerFlags, Resources } from '@topovol/shared';
import type { Controller, ControllerEnv, EventHandler, EventRecorder, Informer, KubeClient, KubeObject, PersistentVolume } from '@topovol/shared';
import { eventually, FakeEvents, FakeWrites, metricSum } from '@topovol/testing';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import { setupZonalPvUpgrade } from '../../src/zonal/zonal-pv-upgrade-controller.js';

// The zonal-pv-upgrade loop's glue (KEP-490 "Topology-aware volume scheduling", "Zonal PV
// Upgrade"): which keys it takes, when, and what a dry run writes. The decision itself is pinned by
// decide-zonal-upgrade.test.ts, the writes by zonal-actuator.nock.test.ts, the whole loop against a
// real API server by test/integration/zonal-pv-upgrade.test.ts.

const Z = 'topology.kubernetes.io/zone';
const BR = 'failure-domain.beta.kubernetes.io/region';

function pv(name: string, labels: Record<string, string> = {}, extra: Partial<PersistentVolume> = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels, resourceVersion: '1', uid: `uid-${name}` },
    spec: { capacity: { storage: '1Gi' }, storageClassName: 'c' },
    ...extra,
  };
}

/** Stands in for the shared PV informer: a cache, and the loop's handlers called as a watch would. */
class FakePvInformer {
  readonly cache = new IndexedCache<PersistentVolume>();
  private readonly handlers: EventHandler<PersistentVolume>[] = [];
  addEventHandler(h: EventHandler<PersistentVolume>): void {
    this.handlers.push(h);
  }
  add(v: PersistentVolume): void {
    this.cache.upsert(v);
    for (const h of this.handlers) h.onAdd?.(v);
  }
  update(next: PersistentVolume): void {
    const old = this.cache.get(objectKey(next))!;
    this.cache.upsert(next);
    for (const h of this.handlers) h.onUpdate?.(old, next);
  }
}

interface Harness {
  informer: FakePvInformer;
  store: FakeWrites;
  events: FakeEvents;
  controller: Controller<string>;
  /** Puts a volume on the server and in the cache (with its add event). */
  seed(v: PersistentVolume): void;
}

const made: Harness[] = [];

function harness(args: string[] = []): Harness {
  const informer = new FakePvInformer();
  const store = new FakeWrites();
  const events = new FakeEvents();
  const env: ControllerEnv = {
    client: store as unknown as KubeClient,
    informers: { forResource: <T extends KubeObject>() => informer as unknown as Informer<T> },
    events: events as unknown as EventRecorder,
    options: parseManagerFlags(['--concurrent-workers=1', ...args]),
    log: logger(),
    setupProgress: () => undefined,
  };
  const controller = setupZonalPvUpgrade(env);
  const h: Harness = { informer, store, events, controller, seed: (v) => informer.add(store.seed(Resources.persistentVolumes, v)) };
  made.push(h);
  return h;
}

const stored = (h: Harness, name: string): PersistentVolume | undefined => h.store.stored<PersistentVolume>(Resources.persistentVolumes, name);
const reconciles = (result: string): Promise<number> => metricSum('controller_runtime_reconcile_total', { controller: 'zonal-pv-upgrade', result });

describe('zonal-pv-upgrade loop: keys, start-up and dry run (fake informer and API server)', function () {
  afterEach(async function () {
    await Promise.all(made.splice(0).map((h) => h.controller.stop(1_000)));
  });

  it('volumes listed before the loop starts are converted when it starts, and a volume added later too', async function () {
    const h = harness();
    // The informer's initial list: its add events come while the queue is held (before the lease).
    h.seed(pv('listed', { [Z]: 'z1' }));
    void h.controller.start();
    await eventually(() => expect(stored(h, 'listed')?.spec?.nodeAffinity).not.to.equal(undefined), 5_000, 10);
    h.seed(pv('added', { [Z]: 'z2' }));
    await eventually(() => expect(stored(h, 'added')?.spec?.nodeAffinity).not.to.equal(undefined), 5_000, 10);
    expect(h.events.recorded.map((e) => [e.name, e.reason])).to.deep.equal([
      ['listed', 'ZonalLabelsConverted'],
      ['added', 'ZonalLabelsConverted'],
    ]);
  });

  it('--dry-run writes nothing and says what it would have written', async function () {
    const h = harness(['--dry-run']);
    h.seed(pv('v', { [Z]: 'z1' }));
    void h.controller.start();
    await eventually(() => expect(h.events.recorded).to.have.length(1), 5_000, 10);
    expect(h.events.recorded[0]).to.include({ type: 'Normal', reason: 'ZonalLabelsConverted' });
    expect(h.events.recorded[0]!.message).to.match(/^dry run: would set spec\.nodeAffinity/);
    expect(stored(h, 'v')?.spec?.nodeAffinity).to.equal(undefined);
  });

  it('a key whose volume has left the cache ends at once: no error, no retry', async function () {
    const h = harness();
    const [ok, failed] = [await reconciles('success'), await reconciles('error')];
    void h.controller.start();
    h.controller.enqueue('deleted-meanwhile');
    await eventually(async () => expect(await reconciles('success')).to.equal(ok + 1), 5_000, 10);
    expect(await reconciles('error')).to.equal(failed);
    expect(h.controller.queue.numRequeues('deleted-meanwhile')).to.equal(0);
  });

  // The binder rewrites volumes often: only a change to what the decision reads is worth another
  // decision (and a malformed volume's Warning is not repeated on every status write).
  const updates: { name: string; change: (v: PersistentVolume) => PersistentVolume; queued: boolean }[] = [
    { name: 'status phase only', change: (v) => ({ ...v, status: { phase: 'Bound' } }), queued: false },
    { name: 'claimRef set by the binder', change: (v) => ({ ...v, spec: { ...v.spec, claimRef: { namespace: 'ns', name: 'c', uid: 'u' } } }), queued: false },
    { name: 'an unrelated label and annotation', change: (v) => ({ ...v, metadata: { ...v.metadata, labels: { ...v.metadata?.labels, app: 'db' }, annotations: { a: 'b' } } }), queued: false },
    { name: 'the zone label changes value', change: (v) => ({ ...v, metadata: { ...v.metadata, labels: { [Z]: 'z2' } } }), queued: true },
    { name: 'a beta region label appears', change: (v) => ({ ...v, metadata: { ...v.metadata, labels: { [Z]: 'z1', [BR]: 'r' } } }), queued: true },
    { name: 'the zone label is removed', change: (v) => ({ ...v, metadata: { ...v.metadata, labels: {} } }), queued: true },
  ];
  for (const u of updates) {
    it(`an update (${u.name}) ${u.queued ? 'queues' : 'does not queue'} the volume`, function () {
      const h = harness();
      const before = pv('v', { [Z]: 'z1' });
      h.informer.add(before);
      // Keys can be seen queued, with no worker to take them.
      h.controller.queue.release();
      h.informer.update(u.change(structuredClone(before)));
      expect(h.controller.queue.isQueued('v')).to.equal(u.queued);
    });
  }

  it('a zonal label that appears with an empty value queues the volume (it is malformed, not absent)', function () {
    const h = harness();
    const before = pv('v', { app: 'db' });
    h.informer.add(before);
    h.controller.queue.release();
    h.informer.update({ ...before, metadata: { ...before.metadata, labels: { app: 'db', [Z]: '' } } });
    expect(h.controller.queue.isQueued('v')).to.equal(true);
  });

  it('exposes every result of topovol_zonal_pv_upgrades_total at 0 once set up, before any volume is handled', async function () {
    metricsRegistry.getSingleMetric('topovol_zonal_pv_upgrades_total')?.reset();
    harness();
    const m = metricsRegistry.getSingleMetric('topovol_zonal_pv_upgrades_total');
    const values = m ? (await m.get()).values : [];
    expect(values.map((v) => [v.labels.result, v.value]).sort()).to.deep.equal([
      ['dry_run', 0],
      ['error', 0],
      ['malformed', 0],
      ['upgraded', 0],
    ]);
  });
});

describe('decideZonalUpgrade: more than one unreadable label', function () {
  it('names every one of them, so one Warning is enough to fix the volume', function () {
    const got = decideZonalUpgrade(pv('v', { [Z]: 'a____b', [BR]: '' }));
    expect(got.kind).to.equal('malformed');
    if (got.kind !== 'malformed') return;
    expect(got.reason).to.contain(`label ${Z}="a____b"`);
    expect(got.reason).to.contain(`label ${BR}=""`);
  });
});
