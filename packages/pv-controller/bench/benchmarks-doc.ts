// docs/benchmarks.md from the recorded pv-binder runs (hack/bench/results/*-latest.json), so every
// figure in the docs comes from a run of hack/bench/pv-binder.sh. Plots are drawn next to it by
// hack/bench/plot-binding.py; write-benchmarks-doc.ts writes the file.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { f, rangeOf, verdict, withRange } from './bench-report.js';
import type { BindingRecord, Ratios } from './bench-report.js';
import type { BindingRun } from './binding-run.js';
import type { DelayedRecord } from './delayed-report.js';
import type { FailoverRecord } from './run-failover.js';
import type { RestartRecord } from './run-restart.js';
import { CEILING_ROUNDS } from './write-ceiling.js';
import { hasRounds, runMedians } from './run-medians.js';
import type { RunMedians } from './run-medians.js';
import { cpuSplit, delayedSection, failoverSection, largeNSection, podsSection, restartSection } from './benchmarks-doc-sections.js';
import { splitCoresSection } from './split-cores-section.js';
import { capacityMissing, capacitySection, readCapacityRecords, readLabelsRecord } from './capacity-doc-section.js';
import { readRollbackRecord, rollbackSection } from './rollback-doc-section.js';
import type { RollbackDocRecord } from './rollback-doc-section.js';
import type { CapacityDocRecord, LabelsDocRecord } from './capacity-doc-section.js';

const pct = (x: number): string => `${f(x * 100, 0)}%`;

function runRow(r: BindingRun): string {
  const cells = [
    r.order,
    `${r.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'}${r.round !== undefined ? ` #${r.round}` : ''}`,
    String(r.n),
    `${r.bound}${r.complete ? '' : ' (incomplete)'}`,
    f(r.firstBoundSeconds),
    f(r.allBoundSeconds),
    f(r.pairsPerSecond),
    f(r.ceiling.writesPerSecond, 0),
    pct(r.fractionOfCeiling),
    f(r.writes.perBinding, 2),
    f(r.binder.cpuMsPerBinding, 2),
    f(r.binder.peakRssMiB),
    r.latencyMs ? `${f(r.latencyMs.p50 / 1000)} / ${f(r.latencyMs.p99 / 1000)}` : '-',
    `${pct(r.machineBusyFraction)} (${pct(r.ownBusyFraction)})`,
  ];
  return `| ${cells.join(' | ')} |`;
}

function ratioRow(r: Ratios): string {
  return `| ${r.order} | ${r.n} | ${f(r.throughput, 2)}x | ${f(r.firstBound, 2)}x | ${f(r.cpuPerBinding, 2)}x | ${f(r.peakRss, 2)}x | ${r.p99 !== undefined ? `${f(r.p99, 2)}x` : '-'} |`;
}

/** The medians of repeated rounds with their ranges (empty for a record of one round each). */
function mediansTable(rec: BindingRecord): string {
  if (!hasRounds(rec.runs)) return '';
  const medians = runMedians(rec.runs);
  const rows = medians.map((m) =>
    [
      m.order,
      m.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager',
      String(m.n),
      `${m.rounds}${m.complete ? '' : ' (incomplete)'}`,
      withRange(m.firstBoundSeconds),
      withRange(m.pairsPerSecond),
      withRange(m.ceilingWritesPerSecond, 0),
      withRange(m.fractionOfCeiling, 0, 100, '%'),
      withRange(m.cpuMsPerBinding, 2),
      withRange(m.peakRssMiB),
    ].join(' | '),
  );
  return `
Each N, order and binder ran ${Math.max(...medians.map((m) => m.rounds))} times (\`--repeat\`, the binders alternating, each run on a fresh control plane;
\`#k\` above is the round). The median of the rounds, with their range in brackets; the ratios, the
standings below read these medians, the plots against N the medians of the rounds that bound every
claim, and the plots over time the first round:

| order | binder | N | rounds | first s | pairs/s | ceiling writes/s | of ceiling | CPU ms/binding | peak RSS MiB |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.map((r) => `| ${r} |`).join('\n')}
`;
}

/** Where Topovol stands on each target of the static-binding runs, in words computed from the record (medians of the rounds). */
function standing(rec: BindingRecord): string[] {
  const t = runMedians(rec.runs).filter((m) => m.contender === 'topovol');
  const nmax = Math.max(...t.map((m) => m.n));
  const of = (m: RunMedians): string => (m.rounds > 1 ? ` (median of ${m.rounds} rounds; range ${rangeOf(m.fractionOfCeiling, 0, 100, '%')})` : '');
  const lines: string[] = [];
  for (const m of t.filter((x) => x.n === nmax)) {
    lines.push(
      `- ${m.order}, N = ${m.n}: ${f(m.pairsPerSecond.median)} pairs/s, ${pct(m.fractionOfCeiling.median)} of the ceiling measured on the same control plane${of(m)} (target ≥ 90%: ${verdict(pct(m.fractionOfCeiling.median), (v) => v >= 90)}); first binding ${f(m.firstBoundSeconds.median)} s after ${m.clockFrom} (target ≤ 2 s: ${verdict(f(m.firstBoundSeconds.median), (v) => v <= 2)}).`,
    );
  }
  for (const ra of rec.ratios.filter((x) => x.n === nmax)) {
    lines.push(`- ${ra.order}, N = ${ra.n}: CPU per binding ${f(ra.cpuPerBinding, 2)}x upstream's (target ≤ 0.20x); peak RSS ${f(ra.peakRss, 2)}x without pods (target ≤ 1x with pods cached: see below).`);
  }
  const ns = [...new Set(t.map((m) => m.n))].sort((a, b) => a - b);
  if (ns.length > 1) {
    for (const order of new Set(t.map((m) => m.order))) {
      const series = ns.map((n) => t.find((m) => m.n === n && m.order === order)).filter((m): m is RunMedians => m !== undefined);
      lines.push(`- ${order}: pairs/s by N ${series.map((m) => `${m.n}: ${f(m.pairsPerSecond.median)}`).join(', ')}; of the ceiling ${series.map((m) => pct(m.fractionOfCeiling.median)).join(', ')} (target: no slowdown with N).`);
    }
  }
  return lines;
}

/** What the busy column says about the ceiling on this machine, computed from the record. */
function reading(rec: BindingRecord): string {
  const t = rec.runs.filter((r) => r.contender === 'topovol');
  const u = rec.runs.filter((r) => r.contender === 'upstream');
  if (t.length === 0) return '';
  const busy = (rs: BindingRun[]): string => `${pct(Math.min(...rs.map((r) => r.machineBusyFraction)))}-${pct(Math.max(...rs.map((r) => r.machineBusyFraction)))}`;
  return `How to read the ceiling: it is measured with the binder stopped, so kube-apiserver and etcd have
the whole machine. While Topovol binds, the machine is ${busy(t)} busy${u.length > 0 ? ` (upstream's runs: ${busy(u)})` : ''}: on ${rec.machine.split(' ')[0]} cores
the binder's own CPU comes off the API server's share, and kube-apiserver and etcd spend more per write
than in the ceiling's rounds when fewer writes are in flight, so the fraction of the ceiling is bounded by
what a binding costs the whole machine (the split below; \`hack/bench/README.md\`, "Profiling", has what the profiles showed).${cpuSplit(rec)}`;
}

/** The records beside the main one, each optional (a section is left out, or listed as not measured, without it). */
export interface OtherRecords {
  delayed?: DelayedRecord;
  restart?: RestartRecord;
  pods?: BindingRecord;
  failover?: FailoverRecord;
  /** The failover scenario with --stop-signal SIGTERM. */
  rollingUpdate?: FailoverRecord;
  large?: BindingRecord;
  /** Static runs with etcd and kube-apiserver on cores of their own (--split-cores). */
  splitCores?: BindingRecord;
  labels?: LabelsDocRecord;
  rollback?: RollbackDocRecord;
}

export function benchmarksDoc(rec: BindingRecord, capacity: readonly CapacityDocRecord[], other: OtherRecords = {}): string {
  const { delayed, restart, pods, failover, rollingUpdate, large, splitCores, labels, rollback } = other;
  const nmax = Math.max(...rec.runs.map((r) => r.n));
  // Every version the runs report, so a record whose runs differ (a tree edited mid-run) says so.
  const versions = [...new Set(rec.runs.filter((r) => r.contender === 'topovol').map((r) => r.version))];
  const topovolVersion = versions.length > 0 ? versions.join(', ') : 'topovol';
  const upstreamVersion = rec.runs.find((r) => r.contender === 'upstream')?.version ?? 'not run';
  return `# Benchmarks

<!-- Generated by hack/bench/benchmarks-doc.sh from hack/bench/results/*-latest.json; do not edit. -->

Every figure here comes from a recorded run of a benchmark under \`hack/bench/\`, each section naming
the invocation; the first, below, is one invocation of \`hack/bench/pv-binder.sh\` on the machine below, with
the upstream component run side by side on a fresh control plane of its own, and the API server's write
ceiling measured on each run's own control plane. Nothing here is asserted by a test; the figures
move by roughly ±15% with machine load (see each run's busy column).

- date: ${rec.date}
- machine: ${rec.machine}
- contenders: ${topovolVersion}; ${upstreamVersion} (\`--controllers=persistentvolume-binder-controller\`)
- flags: both binders \`--kube-api-qps=${rec.options.qps} --kube-api-burst=${rec.options.burst}\`; kube-apiserver \`--max-requests-inflight=2000 --max-mutating-requests-inflight=1000\`; claims over ${rec.options.namespaces} namespaces; ${rec.options.concurrency} requests in flight for creates and for the ceiling
- reproduce: \`hack/bench/pv-binder.sh --n ${rec.options.ns.join(',')} --order ${rec.options.orders.length > 1 ? 'both' : rec.options.orders[0]}${(rec.options.repeat ?? 1) > 1 ? ` --repeat ${rec.options.repeat}` : ''}\`, then \`hack/bench/benchmarks-doc.sh\`

## Static binding (targets 1-3)

What each column means:

- **first s / all s**: from, in \`binder-first\`, the first claim create request (N volumes already \`Available\`);
  in \`objects-first\`, the binder's process start (N volumes and N claims stored before it starts, as after a
  restart or an upgrade), to the first and the last claim seen \`Bound\` by the bench's watch.
- **ceiling writes/s**: ${rec.options.ceilingWrites} JSON merge patches of the stored volumes, ${rec.options.concurrency} in flight on as many
  connections, in ${rec.runs.some((r) => r.ceiling.rounds) ? `${CEILING_ROUNDS} rounds of which the fastest counts (other work on the machine can only slow a round)` : 'one round'}, sent right after the binder stopped, on the same etcd and kube-apiserver with the N
  bound pairs stored. **of ceiling** is pairs/s over (ceiling writes/s ÷ 4): a binding is at least
  four writes (volume \`claimRef\`, volume status, claim \`volumeName\`, claim status).
- **writes/binding**: updates and patches of volumes and claims in kube-apiserver's
  \`apiserver_request_total\` over the window, per bound claim (the bench only creates).
- **CPU ms/binding**: the binder's utime + stime over the window per bound claim. **peak RSS**:
  max(VmHWM, sampled VmRSS) over the binder's life.
- **p50 / p99 s** (binder-first only): claim create response to its first \`Bound\` watch event; mostly
  queueing, because claims are created faster than either binder binds.
- **busy**: share of both cores busy over the window (the part the binder, kube-apiserver, etcd and the
  bench used in brackets).

| order | binder | N | bound | first s | all s | pairs/s | ceiling writes/s | of ceiling | writes/binding | CPU ms/binding | peak RSS MiB | p50 / p99 s | busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rec.runs.map(runRow).join('\n')}
${mediansTable(rec)}
Topovol over kube-controller-manager (throughput above 1 is faster; the rest below 1 is better):

| order | N | throughput | first Bound | CPU per binding | peak RSS | p99 |
| --- | --- | --- | --- | --- | --- | --- |
${rec.ratios.map(ratioRow).join('\n')}

Where Topovol stands against the targets:

${standing(rec).join('\n')}

${reading(rec)}

![Time to bind N pairs](benchmarks/binding-time-vs-n.png)

![Fraction of the write ceiling and CPU per binding](benchmarks/binding-ceiling-and-cpu.png)

![Claims Bound over time](benchmarks/binding-progress.png)

![Claim latency CDF](benchmarks/binding-latency-cdf.png)

![Binder memory over time](benchmarks/binding-rss.png)

${splitCoresSection(splitCores)}
${largeNSection(large, rec)}
${delayedSection(delayed)}
${podsSection(pods)}
${restartSection(restart)}
${failoverSection(failover, restart)}
${failoverSection(rollingUpdate)}
${capacitySection(capacity, labels)}
${rollbackSection(rollback)}
## Not measured yet

${large ? '' : `- N = 100,000 (each contender needs 200,000 objects created first; upstream at its rate above would need
  most of an hour per order).
`}${large && !large.runs.some((r) => r.contender === 'upstream') ? `- kube-controller-manager's binder at N = ${Math.max(...large.runs.map((r) => r.n)).toLocaleString('en-US')} (its rate above would need most of an hour per order, and it
  searches every volume for each pending claim on each 15 s re-sync).
` : ''}${pods ? '' : `- Peak RSS with ${nmax.toLocaleString('en-US')} pods cached next to the volumes and claims (target 3).\n`}${restart ? '' : '- Binding after a SIGKILL (target 5).\n'}${failover ? '' : '- Binding by a newly elected leader (target 5).\n'}${rollingUpdate ? '' : '- A rolling update: the leader stopped with SIGTERM (`--scenario failover --stop-signal SIGTERM`, target 5).\n'}${capacityMissing(capacity)}${labels ? '' : '- Node label changes with one capacity publisher for the cluster (`hack/bench/capacity-labels.sh`).\n'}${rollback ? '' : '- The rollback of kubernetes #94217 end to end (`hack/bench/rollback.sh`).\n'}`;
}

/** docs/benchmarks.md as the records under hack/bench/results make it. */
export function renderBenchmarksDoc(root: string): string {
  const results = path.join(root, 'hack', 'bench', 'results');
  const rec = JSON.parse(readFileSync(path.join(results, 'pv-binder-latest.json'), 'utf8')) as BindingRecord;
  if (rec.benchmark !== 'pv-binder' || !Array.isArray(rec.runs)) throw new Error('pv-binder-latest.json is not a record of this bench version; run hack/bench/pv-binder.sh again');
  const read = <T>(file: string): T | undefined => (existsSync(path.join(results, file)) ? (JSON.parse(readFileSync(path.join(results, file), 'utf8')) as T) : undefined);
  const delayed = read<DelayedRecord>('delayed-binding-latest.json');
  const restart = read<RestartRecord>('restart-latest.json');
  const pods = read<BindingRecord>('pv-binder-pods-latest.json');
  const failover = read<FailoverRecord>('failover-latest.json');
  const rollingUpdate = read<FailoverRecord>('failover-sigterm-latest.json');
  const large = read<BindingRecord>('pv-binder-100k-latest.json');
  const splitCores = read<BindingRecord>('pv-binder-split-cores-latest.json');
  return benchmarksDoc(rec, readCapacityRecords(results), { delayed, restart, pods, failover, rollingUpdate, large, splitCores, labels: readLabelsRecord(results), rollback: readRollbackRecord(results) });
}
