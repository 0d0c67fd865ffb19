// docs/benchmarks.md from the recorded pv-binder runs (hack/bench/results/*-latest.json), so every
// figure in the docs comes from a run of hack/bench/pv-binder.sh. Plots are drawn next to it by
// hack/bench/plot-binding.py; write-benchmarks-doc.ts writes the file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { f } from './bench-report.js';
import type { BindingRecord, Ratios } from './bench-report.js';
import type { BindingRun } from './binding-run.js';
import type { DelayedRecord } from './delayed-report.js';
import type { RestartRecord } from './run-restart.js';

const pct = (x: number): string => `${f(x * 100, 0)}%`;

function runRow(r: BindingRun): string {
  const cells = [
    r.order,
    r.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager',
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

/** Where Topovol stands on each target of the static-binding runs, in words computed from the record. */
function standing(rec: BindingRecord): string[] {
  const t = rec.runs.filter((r) => r.contender === 'topovol');
  const nmax = Math.max(...t.map((r) => r.n));
  const lines: string[] = [];
  for (const r of t.filter((x) => x.n === nmax)) {
    lines.push(
      `- ${r.order}, N = ${r.n}: ${f(r.pairsPerSecond)} pairs/s, ${pct(r.fractionOfCeiling)} of the ceiling measured on the same control plane (target ≥ 90%); first binding ${f(r.firstBoundSeconds)} s after ${r.clockFrom} (target ≤ 2 s).`,
    );
  }
  for (const ra of rec.ratios.filter((x) => x.n === nmax)) {
    lines.push(`- ${ra.order}, N = ${ra.n}: CPU per binding ${f(ra.cpuPerBinding, 2)}x upstream's (target ≤ 0.20x); peak RSS ${f(ra.peakRss, 2)}x without pods (target ≤ 1x with pods cached: see below).`);
  }
  const ns = [...new Set(t.map((r) => r.n))].sort((a, b) => a - b);
  if (ns.length > 1) {
    for (const order of new Set(t.map((r) => r.order))) {
      const series = ns.map((n) => t.find((r) => r.n === n && r.order === order)).filter((r): r is BindingRun => r !== undefined);
      lines.push(`- ${order}: pairs/s by N ${series.map((r) => `${r.n}: ${f(r.pairsPerSecond)}`).join(', ')} (target: no slowdown with N).`);
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
the binder's own CPU comes off the API server's share, so the fraction of the ceiling is bounded by the
binder's CPU as much as by its concurrency (\`hack/bench/README.md\`, "Profiling", has what the profile showed).`;
}

function capacityResults(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((x) => /^capacity-per-node-.*\.md$/.test(x)).sort() : [];
}

function delayedSection(d: DelayedRecord | undefined): string {
  if (!d) return `## Delayed binding behind kube-scheduler (target 4)

Not recorded yet: \`hack/bench/pv-binder.sh --scenario delayed --n 1000\`, then this script.
`;
  const row = (r: DelayedRecord['runs'][number]): string =>
    `| ${r.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${r.claims} | ${r.nodes} | ${r.bound}${r.complete ? '' : ' (incomplete)'} | ${f(r.preBindToBoundMs.p50, 0)} | ${f(r.preBindToBoundMs.p99, 0)} | ${f(r.preBindToBoundMs.max, 0)} | ${f(r.podScheduledMs.p50 / 1000)} / ${f(r.podScheduledMs.p99 / 1000)} | ${f(r.windowSeconds)} | ${f(r.binder.cpuMsPerBinding, 2)} | ${f(r.binder.peakRssMiB)} | ${pct(r.machineBusyFraction)} |`;
  const t = d.runs.find((r) => r.contender === 'topovol');
  const u = d.runs.find((r) => r.contender === 'upstream');
  return `## Delayed binding behind kube-scheduler (target 4)

\`hack/bench/pv-binder.sh --scenario delayed --n ${d.options.ns.join(',')} --nodes ${d.options.nodes}\`, ${d.date}, same machine kind. Each binder on
a fresh control plane with the real kube-scheduler ${d.runs[0]?.version && u ? `(${u.version})` : ''}, its client unthrottled (qps ${d.options.qps}, burst ${d.options.burst});
${d.options.nodes} Ready nodes (no kubelet), a \`WaitForFirstConsumer\` class of local volumes (1.2 per claim, spread over the
nodes), N claims, then one pod per claim created in a burst (${d.options.concurrency} in flight). kube-scheduler's VolumeBinding
plugin pre-binds a volume to each claim (writes its \`claimRef\`) and waits for the binder to finish; **pre-bind → Bound** is,
per claim, the bench's watch event showing the volume's \`claimRef\` to the one showing the claim \`Bound\`.

| binder | claims | nodes | Bound | pre-bind → Bound p50 ms | p99 ms | max ms | pod create → scheduled p50 / p99 s | first pod → last Bound s | CPU ms/binding | peak RSS MiB | busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${d.runs.map(row).join('\n')}
${
    t && u
      ? `\nTopovol/upstream: pre-bind → Bound p50 ${f(t.preBindToBoundMs.p50 / u.preBindToBoundMs.p50, 2)}x, p99 ${f(t.preBindToBoundMs.p99 / u.preBindToBoundMs.p99, 2)}x (target: p99 < 1 s; Topovol's is ${f(t.preBindToBoundMs.p99 / 1000, 2)} s). The scheduler, not the binder, sets the pace here (pods are scheduled at ${f(t.claims / t.windowSeconds)} and ${f(u.claims / u.windowSeconds)} per second); Topovol's CPU per binding is ${f(t.binder.cpuMsPerBinding / u.binder.cpuMsPerBinding, 2)}x upstream's in this scenario (not profiled yet), and on two cores that CPU comes off kube-scheduler's and kube-apiserver's share: pod create → scheduled p99 is ${f(t.podScheduledMs.p99 / u.podScheduledMs.p99, 2)}x.\n`
      : ''
  }
![Pre-bind to Bound CDF](benchmarks/delayed-binding-cdf.png)
`;
}

function podsSection(p: BindingRecord | undefined): string {
  if (!p) return '';
  const rows = p.runs.map((r) => `| ${r.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${r.n} | ${r.pods ?? 0} | ${f(r.binder.peakRssMiB)} | ${f(r.allBoundSeconds)} | ${f(r.binder.cpuMsPerBinding, 2)} |`);
  const ra = p.ratios[0];
  return `## Memory with pods cached (target 3)

\`hack/bench/pv-binder.sh --order objects-first --pods --n ${p.options.ns.join(',')}\`, ${p.date}: as objects-first above, with one pod per claim
(Pending: no scheduler or kubelet runs) stored before the binder starts, so each binder caches N volumes, N claims and N pods.

| binder | N | pods | peak RSS MiB | all Bound s | CPU ms/binding |
| --- | --- | --- | --- | --- | --- |
${rows.join('\n')}
${ra ? `\nTopovol/upstream peak RSS: ${f(ra.peakRss, 2)}x (target ≤ 1x).\n` : ''}`;
}

function restartSection(r: RestartRecord | undefined): string {
  if (!r) return '';
  const row = (x: RestartRecord['runs'][number]): string =>
    `| ${x.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${x.n} | ${x.killEverySeconds} | ${x.bound}${x.complete ? '' : ' (incomplete)'} | ${x.restarts} | ${f(x.restartToBoundMs.p50, 0)} | ${f(x.restartToBoundMs.max, 0)} | ${x.restartsWithoutBinding} | ${f(x.allBoundSeconds)} |`;
  return `## Crash and restart while binding (target 5)

\`hack/bench/pv-binder.sh --scenario restart --n ${r.options.ns.join(',')} --kill-every ${r.options.killEveryMs / 1000}s\`, ${r.date}. Each binder on a fresh control
plane: N volumes made \`Available\`, then N claims created at once while the binder is SIGKILLed every
${r.options.killEveryMs / 1000} s and started again at once, without leader election, until every claim is \`Bound\`. **restart →
first Bound** is, per restart, the new process's start to the first claim the bench sees \`Bound\` after it.

| binder | N | kill every s | Bound | restarts | restart → first Bound p50 ms | max ms | killed before binding | all Bound s |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
${r.runs.map(row).join('\n')}

A newly elected leader (Lease taken over after the old leader's lease expired) is not measured yet.
`;
}

export function benchmarksDoc(rec: BindingRecord, capacityFiles: readonly string[], delayed?: DelayedRecord, restart?: RestartRecord, pods?: BindingRecord): string {
  const nmax = Math.max(...rec.runs.map((r) => r.n));
  const topovolVersion = rec.runs.find((r) => r.contender === 'topovol')?.version ?? 'topovol';
  const upstreamVersion = rec.runs.find((r) => r.contender === 'upstream')?.version ?? 'not run';
  return `# Benchmarks

<!-- Generated by hack/bench/benchmarks-doc.sh from hack/bench/results/pv-binder-latest.json; do not edit. -->

Every figure here comes from one invocation of \`hack/bench/pv-binder.sh\` on the machine below, with
the upstream component run side by side on a fresh control plane of its own, and the API server's write
ceiling measured on each run's own control plane. Nothing here is asserted by a test; the figures
move by roughly ±15% with machine load (see each run's busy column).

- date: ${rec.date}
- machine: ${rec.machine}
- contenders: ${topovolVersion}; ${upstreamVersion} (\`--controllers=persistentvolume-binder-controller\`)
- flags: both binders \`--kube-api-qps=${rec.options.qps} --kube-api-burst=${rec.options.burst}\`; kube-apiserver \`--max-requests-inflight=2000 --max-mutating-requests-inflight=1000\`; claims over ${rec.options.namespaces} namespaces; ${rec.options.concurrency} requests in flight for creates and for the ceiling
- reproduce: \`hack/bench/pv-binder.sh --n ${rec.options.ns.join(',')} --order ${rec.options.orders.length > 1 ? 'both' : rec.options.orders[0]}\`, then \`hack/bench/benchmarks-doc.sh\`

## Static binding (targets 1-3)

What each column means:

- **first s / all s**: from, in \`binder-first\`, the first claim create request (N volumes already \`Available\`);
  in \`objects-first\`, the binder's process start (N volumes and N claims stored before it starts, as after a
  restart or an upgrade), to the first and the last claim seen \`Bound\` by the bench's watch.
- **ceiling writes/s**: ${rec.options.ceilingWrites} JSON merge patches of the stored volumes, ${rec.options.concurrency} in flight on as many
  connections, sent right after the binder stopped, on the same etcd and kube-apiserver with the N
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

Topovol over kube-controller-manager (throughput above 1 is faster; the rest below 1 is better):

| order | N | throughput | first Bound | CPU per binding | peak RSS | p99 |
| --- | --- | --- | --- | --- | --- | --- |
${rec.ratios.map(ratioRow).join('\n')}

Where Topovol stands against the targets:

${standing(rec).join('\n')}

${reading(rec)}

![Time to bind N pairs](benchmarks/binding-time-vs-n.png)

![Claims Bound over time](benchmarks/binding-progress.png)

![Claim latency CDF](benchmarks/binding-latency-cdf.png)

![Binder memory over time](benchmarks/binding-rss.png)

${delayedSection(delayed)}
${podsSection(pods)}
${restartSection(restart)}
## Not measured yet

- N = 100,000 (each contender needs 200,000 objects created first; upstream at its rate above would need
  most of an hour per order).
${pods ? '' : `- Peak RSS with ${nmax.toLocaleString('en-US')} pods cached next to the volumes and claims (target 3).\n`}${restart ? '' : '- Binding after a SIGKILL or a new leader (target 5).\n'}- Capacity (target 6) on this page: \`hack/bench/capacity.sh\` compares the per-node mode with
  external-provisioner at 50 nodes × 5 classes; its records so far (${capacityFiles.length > 0 ? capacityFiles.map((c) => `[${c}](../hack/bench/results/${c})`).join(', ') : 'none'})
  predate this page and are read in \`hack/bench/README.md\` ("capacity per node"); the shared-pools
  record was taken before a volume event refreshed every class of its node, so its latencies are stale.
`;
}

/** docs/benchmarks.md as the records under hack/bench/results make it. */
export function renderBenchmarksDoc(root: string): string {
  const results = path.join(root, 'hack', 'bench', 'results');
  const rec = JSON.parse(readFileSync(path.join(results, 'pv-binder-latest.json'), 'utf8')) as BindingRecord;
  if (rec.benchmark !== 'pv-binder' || !Array.isArray(rec.runs)) throw new Error('pv-binder-latest.json is not a record of this bench version; run hack/bench/pv-binder.sh again');
  const delayedFile = path.join(results, 'delayed-binding-latest.json');
  const delayed = existsSync(delayedFile) ? (JSON.parse(readFileSync(delayedFile, 'utf8')) as DelayedRecord) : undefined;
  const restartFile = path.join(results, 'restart-latest.json');
  const restart = existsSync(restartFile) ? (JSON.parse(readFileSync(restartFile, 'utf8')) as RestartRecord) : undefined;
  const podsFile = path.join(results, 'pv-binder-pods-latest.json');
  const pods = existsSync(podsFile) ? (JSON.parse(readFileSync(podsFile, 'utf8')) as BindingRecord) : undefined;
  return benchmarksDoc(rec, capacityResults(results), delayed, restart, pods);
}
