import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { eventually, repoRoot } from '@topovol/testing';
import { DiffCluster } from './diff-cluster.js';
import { collectorGauges, counterDelta, expectedCollectorGauges, gaugeDiff, outcomeCounters } from './diff-metrics.js';
import type { Series } from './diff-metrics.js';
import { PROVISIONER, ScenarioContext } from './diff-scenario.js';
import { CLAIM_LABEL, CLAIM_NOTE, stateDiff } from './diff-state.js';
import type { ScenarioState } from './diff-state.js';
import { DIVERGENCES_DOC, divergenceRows } from './divergences-doc.js';
import { withoutEvents } from './scenario.js';
import type { Scenario } from './scenario.js';
import { delayedScenarios, nodeNameScenarios } from './scenarios-delayed.js';
import { deletionScenarios } from './scenarios-deletion.js';
import { classScenarios, migrationScenarios, provisioningScenarios } from './scenarios-provisioning.js';
import { realProvisionerScenarios } from './scenarios-real-provisioner.js';
import { reclaimScenarios } from './scenarios-reclaim.js';
import { namedVolumeScenarios, staticScenarios } from './scenarios-static.js';
import { boundClaimScenarios, claimElsewhereScenarios, claimStatusScenarios, preBoundVolumeScenarios } from './scenarios-volume-side.js';
import { zonalScenarios } from './scenarios-zonal.js';

const ALL_SCENARIOS: Scenario[] = [
  ...staticScenarios,
  ...namedVolumeScenarios,
  ...preBoundVolumeScenarios,
  ...boundClaimScenarios,
  ...claimStatusScenarios,
  ...claimElsewhereScenarios,
  ...reclaimScenarios,
  ...provisioningScenarios,
  ...migrationScenarios,
  ...classScenarios,
  ...delayedScenarios,
  ...nodeNameScenarios,
  ...deletionScenarios,
  ...zonalScenarios,
  ...realProvisionerScenarios,
];

/** TOPOVOL_DIFF_ONLY=<text>: run only the scenarios whose name contains it (while working on one). */
const only = process.env.TOPOVOL_DIFF_ONLY;
export const SCENARIOS = only ? ALL_SCENARIOS.filter((s) => s.name.includes(only)) : ALL_SCENARIOS;

/** How many scenarios run at once (each on both sides). */
const PARALLEL = 24;

interface Outcome {
  upstream?: ScenarioState;
  topovol?: ScenarioState;
  error?: unknown;
}

async function runBoth(sc: Scenario, id: string, sides: DiffCluster[]): Promise<Outcome> {
  try {
    const [upstream, topovol] = await Promise.all(
      sides.map(async (cluster) => {
        const ctx = new ScenarioContext(cluster, id);
        await ctx.setup();
        await sc.run(ctx);
        return ctx.settle();
      }),
    );
    return { upstream, topovol };
  } catch (error) {
    return { error };
  }
}

async function inBatches<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/**
 * The differential suite: every binding scenario on two real control planes, one with
 * kube-controller-manager's persistentvolume-binder-controller as the binder, one with Topovol's
 * pv-binder (kube-controller-manager running only the protection controllers on both), and the
 * normalised end states compared. A difference fails unless docs/divergences.md lists the
 * scenario and the scenario pins both end states.
 */
describe('differential: pv-binder against kube-controller-manager\'s binder', function () {
  this.timeout(30 * 60_000);
  const outcomes = new Map<Scenario, Outcome>();
  const ids = new Map(ALL_SCENARIOS.map((sc, i) => [sc, `d${String(i + 1).padStart(2, '0')}`]));
  let sides: DiffCluster[] = [];
  // Topovol's registry is this process's, which earlier suites of the test command counted into.
  const countersAtStart = new Map<string, Map<Series, number>>();

  before(async function () {
    sides = await Promise.all([DiffCluster.start('upstream'), DiffCluster.start('topovol')]);
    for (const c of sides) countersAtStart.set(c.side, outcomeCounters(await c.metricsText()));
    for (const phase of [1, 2] as const) {
      const scenarios = SCENARIOS.filter((sc) => (sc.phase ?? 1) === phase);
      // No default class without scenarios for it (TOPOVOL_DIFF_ONLY): the claims of the first
      // phase would take it retroactively after they settled, while the counters are compared.
      if (scenarios.length === 0) continue;
      if (phase === 2) {
        // One default class per side for the scenarios that need one, after those that need none.
        for (const c of sides) {
          await c.admin.create<StorageClass>(Resources.storageClasses, {
            apiVersion: 'storage.k8s.io/v1',
            kind: 'StorageClass',
            metadata: { name: 'diff-default', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
            provisioner: PROVISIONER,
            volumeBindingMode: 'Immediate',
          });
        }
      }
      await inBatches(
        scenarios,
        PARALLEL,
        async (sc) => void outcomes.set(sc, await runBoth(sc, ids.get(sc)!, sides)),
      );
    }
  });

  after(async function () {
    const failed = this.test?.parent?.tests.some((t) => t.state === 'failed');
    if (failed) for (const s of sides) console.log(`differential: ${s.side} logs in ${s.logDir} (kept with TOPOVOL_KEEP_TEST_DIRS=1)`);
    await Promise.all(sides.map((s) => s.stop()));
  });

  it(`${DIVERGENCES_DOC} names only scenarios of this suite, each once, each declared divergent`, function () {
    const rows = divergenceRows();
    const names = rows.map((r) => r.scenario);
    expect(names.length, 'rows').to.be.greaterThan(0);
    expect(new Set(names).size, 'each scenario once').to.equal(names.length);
    const divergent = ALL_SCENARIOS.filter((s) => s.divergence).map((s) => s.name);
    expect([...names].sort()).to.deep.equal([...divergent].sort());
    for (const r of rows) expect(r.why, `${r.scenario}: why Topovol's end state is better`).to.not.equal('');
    expect(readFileSync(path.join(repoRoot(), DIVERGENCES_DOC), 'utf8'), 'the scenario count it states').to.include(`covers ${ALL_SCENARIOS.length} scenarios`);
  });

  // kube-controller-manager's collector gauges, computed from its caches at scrape time, against
  // what its source says they are for the objects the side has (expectedCollectorGauges); then
  // Topovol's the same way, on its own side's objects. Checked on the objects of every scenario,
  // divergent or not, and with a scrape taken while neither side's volumes and claims changed.
  for (const side of ['upstream', 'topovol'] as const) {
    it(`pv_collector gauges: ${side === 'upstream' ? "kube-controller-manager's" : "Topovol's"} are kube-controller-manager's collector's for the objects on its side`, async function () {
      const cluster = sides.find((c) => c.side === side);
      if (!cluster) throw new Error('not run (the setup failed)');
      const classes = new Set((await cluster.admin.list<StorageClass>(Resources.storageClasses)).items.map((c) => c.metadata!.name!));
      const signature = (v: { volumes: PersistentVolume[]; claims: PersistentVolumeClaim[] }): string =>
        [...v.volumes, ...v.claims].map((o) => `${o.metadata?.namespace}/${o.metadata?.name}@${o.metadata?.resourceVersion}`).sort().join(' ');
      // A scrape can trail the objects by a watch event: the next round settles that.
      const got = await eventually(async () => {
        const before = await cluster.freshView();
        const text = await cluster.metricsText();
        const after = await cluster.freshView();
        if (signature(before) !== signature(after)) throw new Error(`${side}: volumes or claims changed while scraping`);
        const gauges = collectorGauges(text);
        const diff = gaugeDiff(gauges, expectedCollectorGauges(after.volumes, after.claims, side === 'topovol' ? (n) => classes.has(n) : undefined));
        if (diff.length > 0) throw new Error(`${side}: series that differ from the collector's:\n${diff.join('\n')}`);
        return gauges;
      }, 60_000, 2_000);
      // The hostPath, NFS and Block scenario's volumes among them (unless TOPOVOL_DIFF_ONLY left it out).
      if (!only) expect([...got.keys()].filter((k) => k.startsWith('pv_collector_total_pv_count')), 'plugins and modes compared').to.have.length.greaterThan(3);
    });
  }

  // Every provisioning and deletion timed to its end, and every class assigned retroactively, by
  // plugin: the same on both sides, since the scenarios end the same (the divergent ones included:
  // none differs in these).
  it("operation counters: Topovol's volume_operation_total_seconds counts and successful retroactive class assignments are kube-controller-manager's", async function () {
    if (sides.length !== 2) throw new Error('not run (the setup failed)');
    const [upstream, topovol] = await Promise.all(sides.map(async (c) => counterDelta(countersAtStart.get(c.side)!, outcomeCounters(await c.metricsText()))));
    expect(gaugeDiff(topovol!, upstream!), 'series that differ (got: Topovol, want: kube-controller-manager)').to.deep.equal([]);
    if (!only) expect([...upstream!.keys()].filter((k) => k.startsWith('volume_operation_total_seconds_count')), 'operations counted').to.have.length.greaterThan(2);
  });

  for (const sc of SCENARIOS) {
    it(sc.name, function () {
      const o = outcomes.get(sc);
      if (!o) throw new Error('not run (the setup failed)');
      if (o.error) throw o.error instanceof Error ? o.error : new Error(JSON.stringify(o.error));
      // What no binder reads stays as the claim's writer made it, on both sides, divergent or not.
      for (const [name, c] of Object.entries(o.topovol!.claims)) {
        expect(c.labels[CLAIM_LABEL], `claim ${name}: its label`).to.equal(name);
        expect(c.otherAnnotations[CLAIM_NOTE], `claim ${name}: its annotation`).to.equal('kept');
      }
      const under = (line: string, p: string): boolean => line.startsWith(`${p}:`) || line.startsWith(`${p}.`);
      const all = stateDiff(withoutEvents(o.upstream!, sc.ignoreEvents), withoutEvents(o.topovol!, sc.ignoreEvents));
      // A path left out must still differ: else what made it differ (Topovol's own write) stopped.
      for (const p of sc.notCompared ?? []) expect(all.some((line) => under(line, p)), `${p} is left out of the comparison but no longer differs`).to.equal(true);
      const diff = all.filter((line) => !(sc.notCompared ?? []).some((p) => under(line, p)));
      if (!sc.divergence) {
        expect(diff, `upstream → topovol differences (not listed in ${DIVERGENCES_DOC})`).to.deep.equal([]);
        sc.expect?.(o.topovol!);
        return;
      }
      sc.divergence.upstream(o.upstream!);
      sc.divergence.topovol(o.topovol!);
      if (!sc.divergence.upstreamMayAgree) expect(diff, `listed in ${DIVERGENCES_DOC} but both ended the same`).to.not.deep.equal([]);
    });
  }
});
