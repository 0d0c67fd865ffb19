import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';
import { benchmarksDoc, renderBenchmarksDoc } from '../../bench/benchmarks-doc.js';
import { parseBenchFlags } from '../../bench/bench-flags.js';
import { staticRunPlan } from '../../bench/static-run-plan.js';
import { FlagError } from '@topovol/shared';
import { ratios, roundForRecord } from '../../bench/bench-report.js';
import { spread } from '../../bench/run-medians.js';
import { cpuSplit, failoverSection, largeNSection } from '../../bench/benchmarks-doc-sections.js';
import type { BindingRecord } from '../../bench/bench-report.js';
import type { BindingRun } from '../../bench/binding-run.js';
import { parseCoreEventWrites, parseVolumeWrites, writesBetween } from '../../bench/apiserver-writes.js';
import { boundFigures, cdf, timeline } from '../../bench/binding-run.js';
import { killEvery, MAX_ROUNDS, medianRoundSeconds, repeatRounds } from '../../bench/pair-rounds.js';
import { failoverRecordPrefix, firstAfter } from '../../bench/run-failover.js';
import type { FailoverRecord, FailoverRun } from '../../bench/run-failover.js';
import type { LatencySummary } from '@topovol/testing';
import { firstOwnBinding } from '../../bench/run-restart.js';

// The bench's figures are only as good as its arithmetic: these pin what it counts.
describe('pv-binder bench figures', function () {
  it("counts successful updates and patches of volumes and claims from kube-apiserver's metrics, not creates, other resources or errors", function () {
    const text = [
      '# TYPE apiserver_request_total counter',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="persistentvolumes",scope="resource",subresource="",verb="PUT",version="v1"} 10',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="persistentvolumes",scope="resource",subresource="status",verb="PUT",version="v1"} 10',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="persistentvolumeclaims",scope="resource",subresource="",verb="PATCH",version="v1"} 7',
      'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="persistentvolumes",scope="resource",subresource="",verb="PUT",version="v1"} 3',
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="persistentvolumeclaims",scope="resource",subresource="",verb="POST",version="v1"} 99',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PUT",version="v1"} 5',
    ].join('\n');
    const w = parseVolumeWrites(text);
    expect(w.total).to.equal(27);
    expect(w.byKind).to.deep.equal({ 'PUT persistentvolumes': 10, 'PUT persistentvolumes/status': 10, 'PATCH persistentvolumeclaims': 7 });
    expect(writesBetween({ total: 5, byKind: { 'PUT persistentvolumes': 5 } }, w)).to.deep.equal({ total: 22, byKind: { 'PUT persistentvolumes': 5, 'PUT persistentvolumes/status': 10, 'PATCH persistentvolumeclaims': 7 } });
  });

  it("counts the binder's Event writes: core/v1 creates and patches that succeeded, not kube-scheduler's events.k8s.io ones", function () {
    const text = [
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 1000',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="PATCH",version="v1"} 652',
      'apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="PATCH",version="v1"} 3',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="LIST",version="v1"} 9',
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 940',
    ].join('\n');
    expect(parseCoreEventWrites(text)).to.equal(1652);
  });

  it('timeline counts claims Bound from the clock start and ends at the last one', function () {
    const t = timeline([3000, 1000, 2000, 4000], 0, 2);
    expect(t[0]).to.deep.equal([0, 0]);
    expect(t[t.length - 1]).to.deep.equal([4, 4]);
    expect(t.map((p) => p[1])).to.deep.equal([...t.map((p) => p[1])].sort((a, b) => a - b));
  });

  it('a run\'s figures: pairs/s over the window from its clock start, and that as a fraction of the ceiling at four writes per binding', function () {
    const ceiling = { writes: 8000, seconds: 10, writesPerSecond: 800, bindingsPerSecond: 200, inFlight: 32, failed: 0 };
    // Four claims Bound 1, 2, 3 and 4 s after the clock started at t = 10 s.
    const fig = boundFigures([11_000, 12_000, 13_000, 14_000], 10_000, 2, { total: 16, byKind: { 'PUT persistentvolumes': 16 } }, ceiling);
    expect(fig.bound).to.equal(4);
    expect(fig.firstBoundSeconds).to.equal(1);
    expect(fig.allBoundSeconds).to.equal(4);
    expect(fig.pairsPerSecond).to.equal(1);
    expect(fig.fractionOfCeiling).to.equal(1 / 200);
    expect(fig.cpuMsPerBinding).to.equal(500);
    expect(fig.writes.perBinding).to.equal(4);
    expect(fig.boundTimeline[fig.boundTimeline.length - 1]).to.deep.equal([4, 4]);
  });

  it('the record keeps a fraction precise enough to print the percent the run had (no double rounding)', function () {
    // 256.645 pairs/s against a ceiling of 314.977: 81.48%, which three decimals (0.815) would print as 82%.
    const stored = roundForRecord(256.645 / 314.977);
    expect(Math.round(stored * 100)).to.equal(81);
    expect(roundForRecord(1234.56789)).to.equal(1234.568);
    expect(roundForRecord(-0.123456)).to.equal(-0.12346);
  });

  it('splits the CPU of a binding by process at the largest N, and says nothing for records without the split', function () {
    const run = (n: number, cpuSeconds?: BindingRun['cpuSeconds']): BindingRun => ({ contender: 'topovol', order: 'objects-first', n, bound: n, cpuSeconds, ceiling: { writesPerSecond: 1 }, binder: { cpuMsPerBinding: 1, peakRssMiB: 1 } }) as BindingRun;
    const rec = (runs: BindingRun[]): BindingRecord => ({ runs, options: { concurrency: 32 } }) as unknown as BindingRecord;
    const table = cpuSplit(rec([run(10, { binder: 9, apiserver: 9, etcd: 9, bench: 9 }), run(1000, { binder: 1, apiserver: 6, etcd: 2, bench: 1 })]));
    // Per binding at N = 1,000: 1 ms, 6 ms, 2 ms, 1 ms; the binder a tenth of the whole.
    expect(table).to.contain('N = 1000');
    expect(table).to.contain('| objects-first | Topovol | 1.00 | 6.00 | 2.00 | 1.00 | 10% |');
    expect(table).not.to.contain('9.00');
    expect(cpuSplit(rec([run(1000)]))).to.equal('');
  });

  it('per restart (or handover), the wait to the first binding before the next one; the last one without a binding is not counted as missed', function () {
    // Restarts at 0, 100, 200 and 300 ms; bindings at 50 and 260: the one at 100 bound nothing before 200.
    expect(firstAfter([0, 100, 200, 300], [50, 260])).to.deep.equal({ waits: [50, 60], without: 1 });
    expect(firstAfter([], [1, 2])).to.deep.equal({ waits: [], without: 0 });
  });

  it("after a restart, only bindings the new process made count: not the killed process's writes landing after it died", function () {
    // Killed at 100, started at 110. Claim a was claimed before the kill and its status landed at 115
    // (the old process's write in flight); b was claimed at 200 and Bound at 250 by the new process.
    const bound = new Map([['ns/a', 115], ['ns/b', 250], ['ns/c', 900]]);
    const claimed = new Map([['ns/a', 90], ['ns/b', 200], ['ns/c', 800]]);
    expect(firstOwnBinding([{ killedAt: 100, startedAt: 110 }], bound, claimed, 300)).to.deep.equal({ waits: [140], without: 0 });
    // A claimRef the bench's watch saw between the kill and the start is the dead process's write too.
    expect(firstOwnBinding([{ killedAt: 100, startedAt: 110 }], new Map([...bound, ['ns/d', 120]]), new Map([...claimed, ['ns/d', 105]]), 300)).to.deep.equal({ waits: [140], without: 0 });
    // Only bindings up to `until` count (a round's last; later entries would be another round's): the last restart bound nothing by then.
    expect(firstOwnBinding([{ killedAt: 100, startedAt: 110 }, { killedAt: 260, startedAt: 270 }], bound, claimed, 300)).to.deep.equal({ waits: [140], without: 0 });
    // A restart that bound nothing before the next one is counted as such.
    expect(firstOwnBinding([{ killedAt: 100, startedAt: 110 }, { killedAt: 150, startedAt: 160 }], bound, claimed, 300)).to.deep.equal({ waits: [90], without: 1 });
  });

  it("a round's duration is its first claim create to its last binding, and the median round is reported", function () {
    const round = (claimStart: number, last: number): { index: number; claimStart: number; boundTimes: number[]; complete: boolean } => ({ index: 0, claimStart, boundTimes: [claimStart + 10, last], complete: true });
    expect(medianRoundSeconds([round(0, 9000), round(20_000, 21_000), round(40_000, 45_000)])).to.equal(5);
    expect(medianRoundSeconds([round(0, 2000), round(10_000, 14_000)])).to.equal(2);
    expect(medianRoundSeconds([])).to.equal(0);
  });

  it('rounds repeat until the samples add up, never after an incomplete round, and at most MAX_ROUNDS', async function () {
    const rounds = (samples: number[], complete = samples.map(() => true)) =>
      repeatRounds(10, (i) => Promise.resolve({ complete: complete[i] ?? true, samples: samples[i] ?? 0 }), (r) => r.samples);
    expect(await rounds([4, 4, 4, 4])).to.have.length(3);
    expect(await rounds([4, 4, 4], [true, false, true])).to.have.length(2);
    expect(await rounds([])).to.have.length(MAX_ROUNDS);
  });

  it('a failed kill ends the killing and is thrown by stop, not left as an unhandled rejection', async function () {
    let calls = 0;
    const stop = killEvery(1, () => {
      calls++;
      return Promise.reject(new Error('spawn failed'));
    });
    await new Promise((r) => setTimeout(r, 20));
    let thrown: unknown;
    await stop().catch((err: unknown) => (thrown = err));
    expect((thrown as Error).message).to.equal('spawn failed');
    expect(calls).to.equal(1);
  });

  it('the large-N section reads each order against the main record: pairs/s, the fraction of the ceiling, and the first binding against 2 s', function () {
    const run = (n: number, first: number, pairsPerSecond: number, fractionOfCeiling: number, writesPerSecond: number): BindingRun =>
      ({ contender: 'topovol', order: 'objects-first', n, bound: n, complete: true, firstBoundSeconds: first, allBoundSeconds: n / pairsPerSecond, pairsPerSecond, fractionOfCeiling, ceiling: { writesPerSecond }, binder: { cpuMsPerBinding: 1.5, peakRssMiB: 100 }, machineBusyFraction: 0.9 }) as BindingRun;
    const rec = (runs: BindingRun[]): BindingRecord => ({ runs, options: { ns: [runs[0]!.n], orders: ['objects-first'], label: 'big', concurrency: 32 }, date: 'd' }) as unknown as BindingRecord;
    const main = rec([run(1000, 0.3, 250, 0.9, 1200), run(10000, 0.9, 200, 0.8, 1000)]);
    const text = largeNSection(rec([{ ...run(100000, 3.9, 150, 0.8, 750), binder: { cpuMsPerBinding: 1.5, peakRssMiB: 1000, cpuSeconds: 0, rssSeries: [] } }]), main);
    // Against N = 10,000 (the largest N of the main record), not 1,000.
    expect(text).to.contain('| 0.75x (N = 10000) | 1.00x |');
    expect(text).to.contain('first binding 3.9 s (target ≤ 2 s: not met); 0.75x the pairs/s and 1.00x the fraction of the ceiling of N = 10000');
    expect(text).to.contain('the ceiling itself at 0.75x');
    // 900 MiB more for 90,000 more pairs.
    expect(text).to.contain('Peak RSS 1000.0 MiB against 100.0 MiB there: 10.2 KiB for each pair more');
    expect(largeNSection(rec([run(100000, 1.5, 150, 0.8, 750)]), main)).to.contain('(target ≤ 2 s: met)');
    expect(largeNSection(undefined, main)).to.equal('');
  });

  it('with --repeat, the ratios, the standings, the CPU split and the large-N reference read the median of the rounds, not one draw', function () {
    expect(spread([3, 1, 2])).to.deep.equal({ median: 2, min: 1, max: 3 });
    expect(spread([4, 1, 3, 2]).median).to.equal(2.5);
    const run = (contender: 'topovol' | 'upstream', round: number, pairsPerSecond: number, fractionOfCeiling: number, cpuMs: number): BindingRun =>
      ({
        contender, order: 'objects-first', n: 10000, round, bound: 10000, complete: true, clockFrom: "the binder's process start", version: contender,
        firstBoundSeconds: round, allBoundSeconds: 10000 / pairsPerSecond, pairsPerSecond, fractionOfCeiling,
        ceiling: { writesPerSecond: (pairsPerSecond * 4) / fractionOfCeiling }, binder: { cpuMsPerBinding: cpuMs, peakRssMiB: 200 },
        writes: { perBinding: 4 }, cpuSeconds: { binder: cpuMs * 10, apiserver: 50, etcd: 10, bench: 2 }, machineBusyFraction: 0.9, ownBusyFraction: 0.9,
      }) as unknown as BindingRun;
    // Skewed rounds, the median in round 2: a mean, the first round alone or the last round alone each give other figures.
    // Topovol's fractions 95%, 89.7%, 78%: the median shows as 90%, and the verdict follows the figure as shown.
    const runs = [
      { ...run('topovol', 1, 300, 0.95, 2.4), binder: { cpuMsPerBinding: 2.4, peakRssMiB: 260 } },
      run('upstream', 1, 60, 0.25, 7),
      { ...run('topovol', 2, 250, 0.897, 1.5), binder: { cpuMsPerBinding: 1.5, peakRssMiB: 200 } },
      run('upstream', 2, 70, 0.2, 8),
      { ...run('topovol', 3, 240, 0.78, 1.4), binder: { cpuMsPerBinding: 1.4, peakRssMiB: 190 } },
      run('upstream', 3, 90, 0.22, 12),
    ] as BindingRun[];
    const ra = ratios(runs);
    expect(ra).to.have.length(1);
    expect(ra[0]!.throughput).to.equal(250 / 70);
    expect(ra[0]!.cpuPerBinding).to.equal(1.5 / 8);
    const rec = { benchmark: 'pv-binder', date: 'd', machine: '2 CPUs', options: { ns: [10000], orders: ['objects-first'], repeat: 3, qps: 1000, burst: 2000, namespaces: 4, concurrency: 32, ceilingWrites: 10000 }, runs, ratios: ra } as unknown as BindingRecord;
    const doc = benchmarksDoc(rec, []);
    expect(doc).to.contain('--order objects-first --repeat 3');
    expect(doc).to.contain('| objects-first | Topovol | 10000 | 3 | 2.0 (1.0-3.0) | 250.0 (240.0-300.0) |');
    expect(doc).to.contain('250.0 pairs/s, 90% of the ceiling measured on the same control plane (median of 3 rounds; range 78-95%) (target ≥ 90%: met)');
    expect(doc).to.contain('| Topovol #2 |');
    const split = cpuSplit(rec);
    expect(split.split('| objects-first | Topovol |').length - 1).to.equal(1);
    expect(split).to.contain('| objects-first | Topovol | 1.50 | 5.00 | 1.00 | 0.20 |');
    const big = { runs: [{ ...run('topovol', 1, 125, 0.8, 2), n: 100000, round: undefined }], options: { ns: [100000], orders: ['objects-first'], label: '100k', concurrency: 32 }, date: 'd' } as unknown as BindingRecord;
    const large = largeNSection(big, rec);
    expect(large).to.contain('| 0.50x (N = 10000) | 0.89x |');
    expect(large).to.contain('against 200.0 MiB there');
  });

  it('the failover record with --stop-signal SIGTERM is its own section, "A rolling update", read by the stop to the new leader\'s first binding', function () {
    const summary = (p50: number): LatencySummary => ({ count: 10, p50, p90: p50, p99: p50, max: p50 * 2, mean: p50 });
    const run = (contender: 'topovol' | 'upstream', acquired: number, killed: number): FailoverRun =>
      ({ contender, n: 3000, rounds: 3, killEverySeconds: 8, stopSignal: 'SIGTERM', complete: true, bound: 9000, handovers: 10, acquiredToBoundMs: summary(acquired), killedToBoundMs: summary(killed), allBoundSeconds: 20, boundTimeline: [[0, 0]] }) as FailoverRun;
    const rec = (stopSignal?: 'SIGTERM'): FailoverRecord => ({
      benchmark: 'pv-binder-failover', date: 'd', machine: 'm',
      options: { ns: [3000], killEveryMs: 8000, minSamples: 10, stopSignal, lease: { leaseMs: 4000, renewMs: 3000, retryMs: 1000 } },
      runs: [run('topovol', 100, 600), run('upstream', 250, 4500)],
    });
    const term = failoverSection(rec('SIGTERM'));
    expect(term).to.contain('## A rolling update (target 5)');
    expect(term).to.contain('--stop-signal SIGTERM');
    expect(term).to.contain("SIGTERM → new leader's first Bound p50 0.13x (Topovol's 0.60 s, slowest 1.20 s; upstream's 4.50 s");
    expect(term).to.contain("Topovol's slowest from the Lease taken is 0.20 s");
    expect(term).not.to.contain('restart-failover.png');
    // A record without the field is a crash (SIGKILL), as every record before it.
    const kill = failoverSection(rec());
    expect(kill).to.contain('## A newly elected leader (target 5)');
    expect(kill).not.to.contain('--stop-signal');
    // The plot of claims over time while the binder is killed belongs to the SIGKILL section only.
    expect(kill).to.contain('restart-failover.png');
    expect(failoverRecordPrefix('SIGTERM')).to.equal('failover-sigterm');
    expect(failoverRecordPrefix('SIGKILL')).to.equal('failover');
  });

  it('--repeat runs every N and order round after round, each round every contender (they alternate); without it runs carry no round', function () {
    const plan = staticRunPlan({ ns: [1000, 3000], orders: ['binder-first'], only: ['topovol', 'upstream'], repeat: 2 });
    expect(plan.map((p) => `${p.n}/${p.contender}/${String(p.round)}`)).to.deep.equal([
      '1000/topovol/1', '1000/upstream/1', '1000/topovol/2', '1000/upstream/2',
      '3000/topovol/1', '3000/upstream/1', '3000/topovol/2', '3000/upstream/2',
    ]);
    expect(staticRunPlan({ ns: [1000], orders: ['binder-first', 'objects-first'], only: ['topovol'], repeat: 1 })).to.deep.equal([
      { n: 1000, order: 'binder-first', contender: 'topovol', round: undefined },
      { n: 1000, order: 'objects-first', contender: 'topovol', round: undefined },
    ]);
  });

  it('--repeat and --stop-signal are refused by the scenarios that would ignore them', function () {
    expect(parseBenchFlags(['--repeat=3']).repeat).to.equal(3);
    expect(parseBenchFlags(['--scenario=failover', '--stop-signal=SIGTERM']).stopSignal).to.equal('SIGTERM');
    expect(parseBenchFlags([]).stopSignal).to.equal('SIGKILL');
    expect(() => parseBenchFlags(['--scenario=restart', '--repeat=3'])).to.throw(FlagError, /--repeat/);
    expect(() => parseBenchFlags(['--stop-signal=SIGTERM'])).to.throw(FlagError, /--stop-signal/);
    expect(() => parseBenchFlags(['--scenario=failover', '--stop-signal=SIGHUP'])).to.throw(FlagError);
  });

  it("by default throttles neither binder: the client rate limit is far above any ceiling the recorded runs measured (1,000 qps held Topovol's binder at 257 pairs/s)", function () {
    const rec = JSON.parse(readFileSync(path.join(repoRoot(), 'hack/bench/results/pv-binder-latest.json'), 'utf8')) as BindingRecord;
    const fastest = Math.max(...rec.runs.map((r) => r.ceiling.writesPerSecond));
    const { qps, burst } = parseBenchFlags([]);
    expect(qps, 'ten times the fastest ceiling').to.be.at.least(10 * fastest);
    expect(burst).to.be.at.least(qps);
  });

  it('cdf gives 101 nearest-rank percentiles', function () {
    const c = cdf([1, 2, 3, 4]);
    expect(c).to.have.length(101);
    expect(c[0]).to.deep.equal([1, 0]);
    expect(c[50]).to.deep.equal([2, 0.5]);
    expect(c[100]).to.deep.equal([4, 1]);
  });
});

describe('docs/benchmarks.md', function () {
  it('is what the recorded bench results make it (every figure comes from hack/bench/results; regenerate with hack/bench/benchmarks-doc.sh)', function () {
    const root = repoRoot();
    expect(readFileSync(path.join(root, 'docs', 'benchmarks.md'), 'utf8')).to.equal(renderBenchmarksDoc(root));
  });
});
