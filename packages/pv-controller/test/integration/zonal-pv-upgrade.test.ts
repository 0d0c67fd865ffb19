import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { EventRecorder, isConflict, logger, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, Pod } from '@topovol/shared';
import { createReadyNode, createTestNamespace, denyingPolicy, eventually, failure, InProcessLoop, metricSum, sharedControlPlane, startKubeScheduler, untilRefused } from '@topovol/testing';
import type { ControlPlane, InProcessLoopOptions, ManagedProcess } from '@topovol/testing';
import { zonalPvUpgradeDescriptor } from '../../src/zonal-pv-upgrade-descriptor.js';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import type { VolumeNodeAffinity } from '../../src/zonal/decide-zonal-upgrade.js';
import { applyZonalDecision, REASON_CONVERTED, REASON_MALFORMED, REASON_REFUSED } from '../../src/zonal/zonal-actuator.js';
import { deleteNow, eventFor, getPV, pv, pvc } from './binder-harness.js';

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

const upgrades = (result: string): Promise<number> => metricSum('topovol_zonal_pv_upgrades_total', { result });

type Reqs = [string, string[]][];
/** One term, each key In its values: someone else's affinity, or the first term of ours. */
const affinity = (reqs: Reqs): VolumeNodeAffinity => ({
  required: { nodeSelectorTerms: [{ matchExpressions: reqs.map(([key, values]) => ({ key, operator: 'In', values })) }] },
});
/**
 * What the loop writes for these labels. Its exact shape is pinned by the unit tests
 * (decide-zonal-upgrade.test.ts); here it must reach the server as decided and be accepted.
 */
function upgraded(labels: Record<string, string>): VolumeNodeAffinity {
  const d = decideZonalUpgrade({ metadata: { labels }, spec: {} });
  if (d.kind !== 'upgrade') throw new Error(`no upgrade for ${JSON.stringify(labels)}: ${d.kind}`);
  return d.nodeAffinity;
}

async function eventsOf(client: KubeClient, name: string): Promise<Event[]> {
  const list = await client.list<Event>(Resources.events, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((e) => e.involvedObject.kind === 'PersistentVolume');
}

// KEP-490 "Topology-aware volume scheduling", "Zonal PV Upgrade and Downgrade", on the real API server.
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

    // Each: the labels the PV is created with and the first required term expected from them.
    const examples: { what: string; pv: string; labels: Record<string, string>; want: Reqs }[] = [
      { what: "KEP-490's zonal-volume-1 (beta zone + region)", pv: 'zonal-volume-1', labels: { [BZ]: 'us-central1-a', [BR]: 'us-central1' }, want: [[BZ, ['us-central1-a']], [BR, ['us-central1']]] },
      {
        what: "KEP-490's multi-zonal-volume-1 (beta a__b + region)",
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

    it("converts KEP-490's examples and both label families, keeping the labels, with an Event each and the counter", async function () {
      const before = await upgrades('upgraded');
      for (const ex of examples) await admin.create(Resources.persistentVolumes, zonalPV(ex.pv, ex.labels));
      for (const ex of examples) {
        const got = await eventually(async () => {
          const v = await getPV(admin, name(ex.pv));
          expect(v.spec?.nodeAffinity, ex.what).to.not.equal(undefined);
          return v;
        });
        expect(got.spec?.nodeAffinity, ex.what).to.deep.equal(upgraded(ex.labels));
        expect(got.spec?.nodeAffinity?.required?.nodeSelectorTerms[0], ex.what).to.deep.equal(affinity(ex.want).required?.nodeSelectorTerms[0]);
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
      // An in-tree volume CSI migration serves (csi-translation-lib renames its zone keys), and a
      // volume being deleted (a finalizer of the test's holds it): neither is touched.
      const gceSpec = { ...zonalPV('gce', { [Z]: 'z1' }).spec!, hostPath: undefined, gcePersistentDisk: { pdName: 'disk-1', fsType: 'ext4' } };
      const gce = await admin.create<PersistentVolume>(Resources.persistentVolumes, { ...zonalPV('gce', { [Z]: 'z1' }), spec: gceSpec });
      // Labelled only once it is being deleted: converted before, it would have its affinity already.
      const held = zonalPV('terminating', {});
      await admin.create(Resources.persistentVolumes, { ...held, metadata: { ...held.metadata, finalizers: ['test.topovol.dev/hold'] } });
      await admin.delete(Resources.persistentVolumes, name('terminating'));
      const terminating = await admin.patch<PersistentVolume>(Resources.persistentVolumes, name('terminating'), undefined, 'merge', { metadata: { labels: { [Z]: 'z1' } } });
      expect(terminating.metadata?.deletionTimestamp).to.be.a('string');
      // Created last; with one FIFO worker, once it is converted every earlier PV was decided on.
      await admin.create(Resources.persistentVolumes, zonalPV('sentinel', { [Z]: 'z1' }));
      await eventually(async () => expect((await getPV(admin, name('sentinel'))).spec?.nodeAffinity).to.deep.equal(upgraded({ [Z]: 'z1' })));

      const pinnedNow = await getPV(admin, name('pinned'));
      expect(pinnedNow.metadata?.resourceVersion).to.equal(pinned.metadata?.resourceVersion);
      expect(JSON.stringify(pinnedNow.spec)).to.equal(JSON.stringify(pinned.spec));
      expect(pinnedNow.metadata?.labels).to.deep.equal(pinned.metadata?.labels);
      expect(await eventsOf(admin, name('pinned'))).to.deep.equal([]);
      for (const untouched of [gce, terminating]) {
        const now = await getPV(admin, untouched.metadata!.name!);
        expect([now.metadata?.resourceVersion, now.spec?.nodeAffinity], untouched.metadata?.name).to.deep.equal([untouched.metadata?.resourceVersion, undefined]);
        expect(await eventsOf(admin, untouched.metadata!.name!)).to.deep.equal([]);
      }
      await admin.patch(Resources.persistentVolumes, name('terminating'), undefined, 'merge', { metadata: { finalizers: null } });

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

    it('a write a ValidatingAdmissionPolicy denies (a 422 as for invalid fields): a Warning naming it, retried, and converted once the policy goes', async function () {
      this.timeout(300_000);
      // The policy denies every update of volumes carrying this test's label, so it touches no other suite's.
      const policy = `${ns}-deny-pv-updates`;
      const mark = { 'test.topovol.dev/deny-updates': ns };
      let frozenAt = Date.now();
      const lift = await denyingPolicy(admin, policy, {
        rule: { operations: ['UPDATE'], resources: ['persistentvolumes'] },
        objectSelector: { matchLabels: mark },
        validation: { expression: 'false', message: 'volume updates are frozen' },
      });
      try {
        // A volume without zone labels first, to see the policy in force before the loop meets it.
        await admin.create(Resources.persistentVolumes, zonalPV('probe', mark));
        await untilRefused(() => admin.patch(Resources.persistentVolumes, name('probe'), undefined, 'merge', { metadata: { annotations: { probe: String(Date.now()) } } }), 'volume updates are frozen', 'the policy is in force');
        frozenAt = Date.now();
        await admin.create(Resources.persistentVolumes, zonalPV('frozen', { ...mark, [Z]: 'z1' }));
        const warning = await eventually(async () => {
          const e = (await eventsOf(admin, name('frozen'))).find((x) => x.reason === REASON_REFUSED);
          expect(e, 'ZonalAffinityRefused').to.not.equal(undefined);
          return e!;
        });
        expect(warning.type).to.equal('Warning');
        expect(warning.message).to.match(/volume updates are frozen/);
        expect((await eventsOf(admin, name('frozen'))).map((e) => e.reason)).to.not.include(REASON_MALFORMED);
        expect((await getPV(admin, name('frozen'))).spec?.nodeAffinity).to.equal(undefined);
      } finally {
        await lift();
      }
      // The loop's retries (with backoff) convert it once the API server no longer enforces the policy.
      // The backoff doubles from 5 ms (client-go's default), so the next try after the lift comes
      // about as long after it as the lift came after the first refusal: the wait grows with that.
      await eventually(async () => expect((await getPV(admin, name('frozen'))).spec?.nodeAffinity).to.deep.equal(upgraded({ [Z]: 'z1' })), 30_000 + 2 * (Date.now() - frozenAt));
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
        expect(v.spec?.nodeAffinity).to.deep.equal(upgraded({ [Z]: 'a' }));
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
      const err = await failure(applyZonalDecision(deps(admin), stale, decideZonalUpgrade(stale)));
      expect(isConflict(err), String(err)).to.equal(true);
      const now = await getPV(admin, name('raced'));
      expect(now.spec?.nodeAffinity).to.deep.equal(theirs);
      expect(now.metadata?.resourceVersion).to.equal(winner.metadata?.resourceVersion);
      // On fresh data the decision is to leave it alone.
      expect(decideZonalUpgrade(now)).to.deep.equal({ kind: 'none', why: 'hasNodeAffinity' });
    });

    // A cache behind a delete and a re-creation under the name: the volume now is another one (its
    // labels, its data may differ); the write decided on the old one must not reach it.
    it('a volume deleted and made again under the name since the view: the stale write is refused and the new volume left as made', async function () {
      const stale = await admin.create<PersistentVolume>(Resources.persistentVolumes, zonalPV('again', { [Z]: 'z1' }));
      await deleteNow(admin, Resources.persistentVolumes, name('again'));
      const made = await admin.create<PersistentVolume>(Resources.persistentVolumes, zonalPV('again', { [Z]: 'z2' }));
      const err = await failure(applyZonalDecision(deps(admin), stale, decideZonalUpgrade(stale)));
      expect(isConflict(err), String(err)).to.equal(true);
      const now = await getPV(admin, name('again'));
      expect(now.metadata?.uid).to.equal(made.metadata?.uid);
      expect(now.spec?.nodeAffinity).to.equal(undefined);
      expect(now.metadata?.resourceVersion).to.equal(made.metadata?.resourceVersion);
    });

    it('after a conflict on an unrelated change, the retry on fresh data converts', async function () {
      const stale = await admin.create(Resources.persistentVolumes, zonalPV('bumped', { [BZ]: 'z1' }));
      await admin.patch(Resources.persistentVolumes, name('bumped'), undefined, 'merge', { metadata: { annotations: { touched: 'yes' } } });
      const err = await failure(applyZonalDecision(deps(admin), stale, decideZonalUpgrade(stale)));
      expect(isConflict(err), String(err)).to.equal(true);
      const fresh = await getPV(admin, name('bumped'));
      await applyZonalDecision(deps(admin), fresh, decideZonalUpgrade(fresh));
      const now = await getPV(admin, name('bumped'));
      expect(now.spec?.nodeAffinity).to.deep.equal(upgraded({ [BZ]: 'z1' }));
      expect(now.metadata?.annotations).to.include({ touched: 'yes' });
    });
  });

  // The kube-scheduler's VolumeBinding filter checks the written nodeAffinity and its VolumeZone
  // filter still checks the labels: the upgrade must not refuse a node VolumeZone accepts
  // (pkg/scheduler/framework/plugins/volumezone/volume_zone.go falls back from a beta label to the
  // node's GA label, and passes nodes without any zone/region label).
  describe('with the real kube-scheduler', function () {
    this.timeout(180_000);
    const SCHEDULER = 'topovol-zonal-interop';
    let cp: ControlPlane;
    let config: string;
    let loop: RunningZonal | undefined;
    let scheduler: ManagedProcess | undefined;
    let node: string | undefined;

    before(async function () {
      cp = await sharedControlPlane();
      // A profile of our own name: the default plugins, scheduling only this suite's pods.
      config = path.join(cp.dir, 'zonal-interop-scheduler.yaml');
      writeFileSync(
        config,
        [
          'apiVersion: kubescheduler.config.k8s.io/v1',
          'kind: KubeSchedulerConfiguration',
          'leaderElection: { leaderElect: false }',
          `clientConnection: { kubeconfig: ${JSON.stringify(cp.kubeconfigPath)} }`,
          `profiles: [{ schedulerName: ${SCHEDULER} }]`,
          '',
        ].join('\n'),
      );
      loop = await RunningZonal.start();
    });
    after(async function () {
      await loop?.stop();
    });
    // Runs before the suite's afterEach, which deletes the volumes.
    afterEach(async function () {
      await scheduler?.stop();
      scheduler = undefined;
      // No kubelet runs: only a zero grace period removes a pod bound to a node.
      await admin.delete(Resources.pods, 'app', ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
      await deleteNow(admin, Resources.persistentVolumeClaims, 'data', ns).catch(() => undefined);
      if (node) await admin.delete(Resources.nodes, node).catch(() => undefined);
      node = undefined;
    });

    /**
     * A PV with these labels, bound to claim "data" by name on both sides (no binder needed), is
     * upgraded by the loop; a pod using the claim, pinned to one new Ready node by its hostname
     * (other suites' nodes cannot take it), is then scheduled. Returns the PV as upgraded and the
     * node the scheduler bound the pod to.
     */
    async function scheduleAfterUpgrade(pvLabels: Record<string, string>, nodeLabels: Record<string, string>): Promise<{ volume: PersistentVolume; nodeName: string }> {
      node = name('node');
      await createReadyNode(admin, node, nodeLabels);
      await admin.create(Resources.persistentVolumes, pv(name('vol'), '1Gi', { class: 'my-class', labels: pvLabels, claimRef: { namespace: ns, name: 'data' } }));
      // bind-completed makes the claim fully bound for the scheduler: it checks the PV, binds nothing.
      await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'data', '1Gi', { class: 'my-class', volumeName: name('vol'), annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }));
      const volume = await eventually(async () => {
        const v = await getPV(admin, name('vol'));
        expect(v.spec?.nodeAffinity).to.not.equal(undefined);
        return v;
      });
      await admin.create<Pod>(Resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'app', namespace: ns },
        spec: {
          schedulerName: SCHEDULER,
          nodeSelector: { 'kubernetes.io/hostname': node },
          containers: [{ name: 'c', image: 'busybox' }],
          volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }],
        },
      });
      // Started only now, so its first list already holds the upgraded PV: it cannot schedule
      // from a copy without the affinity.
      scheduler = await startKubeScheduler(cp, [`--config=${config}`]);
      const nodeName = await eventually(
        async () => {
          const p = await admin.get<Pod>(Resources.pods, 'app', ns);
          if (p.spec?.nodeName) return p.spec.nodeName;
          const why = p.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message ?? 'not scheduled yet';
          throw new Error(`pod app: ${why}\n${scheduler?.logTail(5) ?? ''}`);
        },
        90_000,
        250,
      );
      return { volume, nodeName };
    }

    it('a PV with the beta zone label stays schedulable on a node with only the GA zone label after the upgrade', async function () {
      const { volume, nodeName } = await scheduleAfterUpgrade({ [BZ]: 'zone-x' }, { [Z]: 'zone-x' });
      expect(nodeName).to.equal(node);
      // KEP-490's term alone (beta zone In) would have refused this node.
      expect(volume.spec?.nodeAffinity?.required?.nodeSelectorTerms[0]).to.deep.equal({ matchExpressions: [{ key: BZ, operator: 'In', values: ['zone-x'] }] });
      expect(volume.spec?.nodeAffinity).to.deep.equal(upgraded({ [BZ]: 'zone-x' }));
    });

    it('a PV with zone and region labels stays schedulable on a node without any zone/region label after the upgrade', async function () {
      const { nodeName } = await scheduleAfterUpgrade({ [BZ]: 'zone-x', [BR]: 'region-x' }, {});
      expect(nodeName).to.equal(node);
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
      const eventsBefore = await metricSum('topovol_events_total', { component: COMPONENT, type: 'Normal', reason: REASON_CONVERTED });
      const created = [
        await admin.create(Resources.persistentVolumes, zonalPV('zonal-volume-1', { [BZ]: 'us-central1-a', [BR]: 'us-central1' })),
        await admin.create(Resources.persistentVolumes, zonalPV('multi-zonal-volume-1', { [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' })),
      ];
      await eventually(async () => expect(await upgrades('dry_run')).to.equal(dryBefore + created.length));
      expect(await upgrades('upgraded')).to.equal(upgradedBefore);
      // The Event is recorded (and counted) as in a real run; like every other write, the
      // manager's dry-run recorder does not send it to the API server.
      expect(await metricSum('topovol_events_total', { component: COMPONENT, type: 'Normal', reason: REASON_CONVERTED })).to.equal(eventsBefore + created.length);
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
