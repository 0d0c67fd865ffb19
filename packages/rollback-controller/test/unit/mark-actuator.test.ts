import { expect } from 'chai';
import { isConflict, KubeApiError, logger, metricsRegistry, Resources } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import type { MarkDecision } from '../../src/rollback/decide-mark.js';
import { writeMark } from '../../src/rollback/mark-actuator.js';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, ANN_PROVISIONED_FOR_WORKLOAD, ANN_USED_BECAUSE, LABEL_USAGE, Reasons } from '../../src/rollback/marks.js';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { pv } from './rollback-world-fixture.js';

// A volume's marks over an in-memory store that enforces the resourceVersion precondition like the API server.
describe('mark actuator over an in-memory API server', function () {
  let store: FakeWrites;
  let events: FakeEvents;
  let volume: PersistentVolume;
  const deps = (dryRun = false, remembered: string[] = []) => ({ client: store, events, log: logger(), dryRun, rememberDryRunMark: (name: string) => void remembered.push(name) });
  const stored = (): PersistentVolume | undefined => store.stored(Resources.persistentVolumes, 'v');
  const unused = (v: PersistentVolume): MarkDecision => ({ kind: 'markUnused', volume: v, node: 'a', podUid: 'uid-p', workloadUid: 'uid-w', podName: 'p' });

  beforeEach(function () {
    store = new FakeWrites();
    events = new FakeEvents();
    volume = store.seed(Resources.persistentVolumes, { ...pv('v', 'c', { provisioned: false }), kind: 'PersistentVolume' });
  });

  const cases: { name: string; decision: (v: PersistentVolume) => MarkDecision; labels?: Record<string, string>; annotations?: Record<string, string>; reason?: string }[] = [
    { name: 'none: nothing', decision: () => ({ kind: 'none' }) },
    {
      name: 'markUnused: the usage label, the node, pod and workload it was provisioned for, an Event',
      decision: unused,
      labels: { [LABEL_USAGE]: 'unused' },
      annotations: { [ANN_PROVISIONED_FOR_NODE]: 'a', [ANN_PROVISIONED_FOR_POD]: 'uid-p', [ANN_PROVISIONED_FOR_WORKLOAD]: 'uid-w' },
      reason: Reasons.MarkedUnused,
    },
    {
      name: 'markUsed: the usage label and why, the node when not marked yet, an Event',
      decision: (v) => ({ kind: 'markUsed', volume: v, because: 'mounted on node a', node: 'a' }),
      labels: { [LABEL_USAGE]: 'used' },
      annotations: { [ANN_USED_BECAUSE]: 'mounted on node a', [ANN_PROVISIONED_FOR_NODE]: 'a' },
      reason: Reasons.MarkedUsed,
    },
  ];
  for (const c of cases) {
    it(c.name, async function () {
      await writeMark(deps(), c.decision(volume));
      expect(stored()?.metadata?.labels).to.deep.equal(c.labels ?? {});
      expect(stored()?.metadata?.annotations).to.deep.equal(c.annotations ?? {});
      expect(events.recorded.map((e) => e.reason)).to.deep.equal(c.reason ? [c.reason] : []);
    });
  }

  it('a decision on an older resourceVersion writes nothing and sends no Event (409 Conflict)', async function () {
    await store.patch(Resources.persistentVolumes, 'v', undefined, 'merge', { metadata: { labels: { other: 'writer' } } });
    const before = store.snapshot();
    const err = await writeMark(deps(), unused(volume)).then(() => undefined, (e: unknown) => e);
    expect(isConflict(err), `expected a Conflict, got ${String(err)}`).to.equal(true);
    expect(store.snapshot()).to.deep.equal(before);
    expect(events.recorded).to.deep.equal([]);
  });

  // Refused (the marks' admission policy naming another install's ServiceAccount, a webhook, a
  // narrowed role): it used to throw into the work queue's backoff with no Event and no count.
  it('a mark the API server refuses: a Warning on the volume, counted, said to the caller; nothing written', async function () {
    const before = store.snapshot();
    const errors = async (): Promise<number> => (await metricsRegistry.getSingleMetric('topovol_rollback_volume_marks_refused_total')?.get())?.values.find((x) => x.labels.mark === 'unused')?.value ?? 0;
    const was = await errors();
    const refusing = { patch: () => Promise.reject(new KubeApiError(403, { reason: 'Forbidden', message: 'ValidatingAdmissionPolicy topovol-rollback-marks denied request: only the rollback controller may mark a volume unused' })) };
    expect(await writeMark({ ...deps(), client: refusing }, unused(volume))).to.equal('refused');
    expect(store.snapshot()).to.deep.equal(before);
    expect(events.recorded.map((e) => [e.type, e.reason, /refused marking the volume unused.*only the rollback controller/.test(e.message)])).to.deep.equal([['Warning', Reasons.MarkRefused, true]]);
    expect((await errors()) - was).to.equal(1);
    // Other errors still go to the work queue.
    const failing = { patch: () => Promise.reject(new KubeApiError(503, { message: 'etcd leader changed' })) };
    expect(await writeMark({ ...deps(), client: failing }, unused(volume)).then(() => 'returned', (e: unknown) => (e as KubeApiError).code)).to.equal(503);
  });

  it('dry-run: nothing written, the mark handed over for later decisions, the Event still sent', async function () {
    const before = store.snapshot();
    const remembered: string[] = [];
    await writeMark(deps(true, remembered), unused(volume));
    expect(store.snapshot()).to.deep.equal(before);
    expect(remembered).to.deep.equal(['v']);
    expect(events.recorded.map((e) => e.reason)).to.deep.equal([Reasons.MarkedUnused]);
  });
});
