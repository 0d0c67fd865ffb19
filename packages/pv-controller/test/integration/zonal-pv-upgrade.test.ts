import { expect } from 'chai';
import { EventRecorder, isConflict, logger, metricsRegistry, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume } from '@topovol/shared';
import { createTestNamespace, eventually, InProcessLoop, sharedControlPlane } from '@topovol/shared/testing';
import type { InProcessLoopOptions } from '@topovol/shared/testing';
import { zonalPvUpgradeDescriptor } from '../../src/zonal-pv-upgrade-descriptor.js';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import type { VolumeNodeAffinity } from '../../src/zonal/decide-zonal-upgrade.js';
import { applyZonalDecision, REASON_CONVERTED, REASON_MALFORMED } from '../../src/zonal/zonal-actuator.js';
import { deleteNow, eventFor, getPV, pv } from './binder-harness.js';

const BZ = 'failure-domain.beta.kubernetes.io/zone';
const BR = 'failure-domain.beta.kubernetes.io/region';
const Z = 'topology.kubernetes.io/zone';
const R = 'topology.kubernetes.io/region';
const COMPONENT = zonalPvUpgradeDescriptor.eventComponent!;

/**
 * The loop running in-process as the manager would run it: shared informers, an Event recorder
 * that (like the manager's) writes nothing in dry-run mode, flags parsed by the manager's parser.
 * One worker keeps the queue first-in first-out, which the "left alone" checks rely on.
 */
type RunningZonal = InProcessLoop;
const RunningZonal = {
  start: (args: string[] = [], opts?: InProcessLoopOptions): Promise<InProcessLoop> => InProcessLoop.start(zonalPvUpgradeDescriptor, ['--concurrent-workers=1', ...args], opts),
};

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const m = metricsRegistry.getSingleMetric(name);
  if (!m) return 0;
  const { values } = await m.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}
const upgrades = (result: string): Promise<number> => metricValue('topovol_zonal_pv_upgrades_total', { result });

type Reqs = [string, string[]][];
const affinity = (reqs: Reqs): VolumeNodeAffinity => ({
  required: { nodeSelectorTerms: [{ matchExpressions: reqs.map(([key, values]) => ({ key, operator: 'In', values })) }] },
});

async function eventsOf(client: KubeClient, name: string): Promise<Event[]> {
  const list = await client.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((e) => e.involvedObject.kind === 'PersistentVolume');
}

// Seed 001 "Zonal PV Upgrade and Downgrade" on the real API server (acceptance 5).
describe('zonal-pv-upgrade (real API server)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let ns: string;
  const name = (s: string): string => `${ns}-${s}`;
  const zonalPV = (s: string, labels: Record<string, string>, nodeAffinity?: VolumeNodeAffinity): PersistentVolume => ({
    ...pv(name(s), '100Gi', { class: 'my-class', labels, nodeAffinity }),
  });

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'zonal-');
  });
  // Volumes are cluster-scoped and the API server is shared with other suites: remove ours.
  afterEach(async function () {
    const all = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    await Promise.all(all.items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`)).map((v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!)));
  });

  describe('converting', function () {
    let loop: RunningZonal;
    before(async function () {
      loop = await RunningZonal.start();
    });
    after(async function () {
      await loop?.stop();
    });

    // Each: the labels the PV is created with and the single required term expected from them.
    const examples: { what: string; pv: string; labels: Record<string, string>; want: Reqs }[] = [
      { what: "the seed's zonal-volume-1 (beta zone + region)", pv: 'zonal-volume-1', labels: { [BZ]: 'us-central1-a', [BR]: 'us-central1' }, want: [[BZ, ['us-central1-a']], [BR, ['us-central1']]] },
      {
        what: "the seed's multi-zonal-volume-1 (beta a__b + region)",
        pv: 'multi-zonal-volume-1',
        labels: { [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' },
        want: [[BZ, ['us-central1-a', 'us-central1-b']], [BR, ['us-central1']]],
      },
      { what: 'a single GA zone', pv: 'ga-zone', labels: { [Z]: 'europe-west1-b' }, want: [[Z, ['europe-west1-b']]] },
      { what: 'a GA multi-zone a__b__c', pv: 'ga-multi', labels: { [Z]: 'a__b__c' }, want: [[Z, ['a', 'b', 'c']]] },
      { what: 'a region only', pv: 'region-only', labels: { [R]: 'europe-west1' }, want: [[R, ['europe-west1']]] },
      {
        what: 'both label families on one PV',
        pv: 'both-families',
        labels: { [BZ]: 'us-east1-b', [BR]: 'us-east1', [Z]: 'us-east1-b', [R]: 'us-east1', app: 'db' },
        want: [[Z, ['us-east1-b']], [R, ['us-east1']], [BZ, ['us-east1-b']], [BR, ['us-east1']]],
      },
    ];

    it("converts the seed's examples and both label families, keeping the labels, with an Event each and the counter", async function () {
      const before = await upgrades('upgraded');
      for (const ex of examples) await admin.create(Resources.persistentVolumes, zonalPV(ex.pv, ex.labels));
      for (const ex of examples) {
        const got = await eventually(async () => {
          const v = await getPV(admin, name(ex.pv));
          expect(v.spec?.nodeAffinity, ex.what).to.not.equal(undefined);
          return v;
        });
        expect(got.spec?.nodeAffinity, ex.what).to.deep.equal(affinity(ex.want));
        expect(got.metadata?.labels, ex.what).to.deep.equal(ex.labels);
        // Only nodeAffinity was added: the rest of the spec is as created.
        expect(got.spec?.hostPath?.path).to.equal(`/tmp/${name(ex.pv)}`);
        expect(got.spec?.storageClassName).to.equal('my-class');
        const ev = await eventFor(admin, got, REASON_CONVERTED);
        expect(ev.type).to.equal('Normal');
        expect(ev.source?.component).to.equal(COMPONENT);
        expect(ev.message).to.contain(ex.want[0]![0]);
      }
      expect(await upgrades('upgraded')).to.equal(before + examples.length);
    });

    it('leaves a PV that already has nodeAffinity byte-identical, and malformed labels unchanged with a Warning', async function () {
      const malformedBefore = await upgrades('malformed');
      const errorsBefore = await upgrades('error');
      const hostAffinity = affinity([['kubernetes.io/hostname', ['node-1']]]);
      const pinned = await admin.create(Resources.persistentVolumes, zonalPV('pinned', { [BZ]: 'us-central1-a', [BR]: 'us-central1' }, hostAffinity));
      const badSplit = await admin.create(Resources.persistentVolumes, zonalPV('bad-split', { [BZ]: 'us-central1-a____us-central1-b', [BR]: 'us-central1' }));
      // A valid label whose "__" split leaves "_b", which the API server refuses as a selector value.
      const oddSplit = await admin.create(Resources.persistentVolumes, zonalPV('odd-split', { [Z]: 'a___b' }));
      const empty = await admin.create(Resources.persistentVolumes, zonalPV('empty', { [Z]: '' }));
      // Created last; with one FIFO worker, once it is converted every earlier PV was decided on.
      await admin.create(Resources.persistentVolumes, zonalPV('sentinel', { [Z]: 'z1' }));
      await eventually(async () => expect((await getPV(admin, name('sentinel'))).spec?.nodeAffinity).to.deep.equal(affinity([[Z, ['z1']]])));

      const pinnedNow = await getPV(admin, name('pinned'));
      expect(pinnedNow.metadata?.resourceVersion).to.equal(pinned.metadata?.resourceVersion);
      expect(JSON.stringify(pinnedNow.spec)).to.equal(JSON.stringify(pinned.spec));
      expect(pinnedNow.metadata?.labels).to.deep.equal(pinned.metadata?.labels);
      expect(await eventsOf(admin, name('pinned'))).to.deep.equal([]);

      for (const bad of [badSplit, oddSplit, empty]) {
        const ev = await eventFor(admin, bad, REASON_MALFORMED);
        expect(ev.type).to.equal('Warning');
        const now = await getPV(admin, bad.metadata!.name!);
        expect(now.metadata?.resourceVersion, bad.metadata?.name).to.equal(bad.metadata?.resourceVersion);
        expect(now.spec?.nodeAffinity).to.equal(undefined);
      }
      expect((await eventFor(admin, badSplit, REASON_MALFORMED)).message).to.contain('us-central1-a____us-central1-b');
      expect(await upgrades('malformed')).to.equal(malformedBefore + 3);
      expect(await upgrades('error')).to.equal(errorsBefore);
    });

    it('converts a malformed PV once its label is fixed, and is idempotent afterwards', async function () {
      const upgradedBefore = await upgrades('upgraded');
      const bad = await admin.create(Resources.persistentVolumes, zonalPV('fixed-later', { [Z]: 'a____b' }));
      await eventFor(admin, bad, REASON_MALFORMED);
      // Malformed another way, then the first way again: the same Warning as before, aggregated
      // into its Event (count 2, kubectl describe's "x2"), as client-go's recorder does.
      const relabel = (value: string) => admin.patch(Resources.persistentVolumes, bad.metadata!.name!, undefined, 'merge', { metadata: { labels: { [Z]: value } } });
      const malformed = async (value: string): Promise<Event[]> =>
        (await admin.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${bad.metadata!.name!},reason=${REASON_MALFORMED}` })).items.filter((e) => e.message?.includes(value));
      await relabel('x____y');
      await eventually(async () => expect(await malformed('x____y')).to.have.length(1));
      await relabel('a____b');
      await eventually(async () => expect((await malformed('a____b')).map((e) => e.count)).to.deep.equal([2]));
      await relabel('a');
      const done = await eventually(async () => {
        const v = await getPV(admin, name('fixed-later'));
        expect(v.spec?.nodeAffinity).to.deep.equal(affinity([[Z, ['a']]]));
        return v;
      });
      // A later label change reaches the loop again, which has nothing more to do.
      await admin.patch(Resources.persistentVolumes, name('fixed-later'), undefined, 'merge', { metadata: { labels: { [Z]: 'a__b', app: 'x' } } });
      const sentinel = await admin.create(Resources.persistentVolumes, zonalPV('sentinel-2', { [R]: 'r' }));
      // The Event follows the count, and with one FIFO worker the sentinel comes last.
      await eventFor(admin, sentinel, REASON_CONVERTED);
      const after = await getPV(admin, name('fixed-later'));
      expect(after.spec?.nodeAffinity).to.deep.equal(done.spec?.nodeAffinity);
      expect(after.metadata?.labels).to.deep.equal({ [Z]: 'a__b', app: 'x' });
      expect(await upgrades('upgraded')).to.equal(upgradedBefore + 2); // fixed-later once, then the sentinel
    });
  });

  describe('the write (actuator) under races', function () {
    const deps = (client: KubeClient) => ({ client, events: new EventRecorder(client, COMPONENT, 'test'), log: logger(), dryRun: false });

    it('a stale view is refused with Conflict (resourceVersion precondition) and overwrites nothing', async function () {
      const stale = await admin.create(Resources.persistentVolumes, zonalPV('raced', { [Z]: 'z1' }));
      // Someone else sets an affinity first (the API server allows it while it is unset).
      const theirs = affinity([['kubernetes.io/hostname', ['node-7']]]);
      const winner = await admin.patch<PersistentVolume>(Resources.persistentVolumes, name('raced'), undefined, 'merge', { spec: { nodeAffinity: theirs } });
      let err: unknown;
      try {
        await applyZonalDecision(deps(admin), stale, decideZonalUpgrade(stale));
      } catch (e) {
        err = e;
      }
      expect(isConflict(err), String(err)).to.equal(true);
      const now = await getPV(admin, name('raced'));
      expect(now.spec?.nodeAffinity).to.deep.equal(theirs);
      expect(now.metadata?.resourceVersion).to.equal(winner.metadata?.resourceVersion);
      // On fresh data the decision is to leave it alone.
      expect(decideZonalUpgrade(now)).to.deep.equal({ kind: 'none', why: 'hasNodeAffinity' });
    });

    it('after a conflict on an unrelated change, the retry on fresh data converts', async function () {
      const stale = await admin.create(Resources.persistentVolumes, zonalPV('bumped', { [BZ]: 'z1' }));
      await admin.patch(Resources.persistentVolumes, name('bumped'), undefined, 'merge', { metadata: { annotations: { touched: 'yes' } } });
      let err: unknown;
      try {
        await applyZonalDecision(deps(admin), stale, decideZonalUpgrade(stale));
      } catch (e) {
        err = e;
      }
      expect(isConflict(err), String(err)).to.equal(true);
      const fresh = await getPV(admin, name('bumped'));
      await applyZonalDecision(deps(admin), fresh, decideZonalUpgrade(fresh));
      const now = await getPV(admin, name('bumped'));
      expect(now.spec?.nodeAffinity).to.deep.equal(affinity([[BZ, ['z1']]]));
      expect(now.metadata?.annotations).to.include({ touched: 'yes' });
    });
  });

  describe('--dry-run', function () {
    let loop: RunningZonal;
    before(async function () {
      loop = await RunningZonal.start(['--dry-run']);
    });
    after(async function () {
      await loop?.stop();
    });

    it('reports (counter, Event recorded, log) but writes nothing', async function () {
      const dryBefore = await upgrades('dry_run');
      const upgradedBefore = await upgrades('upgraded');
      const eventsBefore = await metricValue('topovol_events_total', { component: COMPONENT, type: 'Normal', reason: REASON_CONVERTED });
      const created = [
        await admin.create(Resources.persistentVolumes, zonalPV('zonal-volume-1', { [BZ]: 'us-central1-a', [BR]: 'us-central1' })),
        await admin.create(Resources.persistentVolumes, zonalPV('multi-zonal-volume-1', { [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' })),
      ];
      await eventually(async () => expect(await upgrades('dry_run')).to.equal(dryBefore + created.length));
      expect(await upgrades('upgraded')).to.equal(upgradedBefore);
      // The Event is recorded (and counted) as in a real run; like every other write, the
      // manager's dry-run recorder does not send it to the API server.
      expect(await metricValue('topovol_events_total', { component: COMPONENT, type: 'Normal', reason: REASON_CONVERTED })).to.equal(eventsBefore + created.length);
      await loop.events.flush();
      for (const c of created) {
        const now = await getPV(admin, c.metadata!.name!);
        expect(now.metadata?.resourceVersion).to.equal(c.metadata?.resourceVersion);
        expect(now.spec?.nodeAffinity).to.equal(undefined);
        expect(await eventsOf(admin, c.metadata!.name!)).to.deep.equal([]);
      }
    });
  });
});
