// The scenario sections of docs/benchmarks.md (delayed binding, pods cached, restart, failover),
// each rendered from its own recorded run under hack/bench/results.
import { f, verdict } from './bench-report.js';
import type { BindingRecord } from './bench-report.js';
import type { DelayedRecord } from './delayed-report.js';
import type { FailoverRecord } from './run-failover.js';
import type { RestartRecord } from './run-restart.js';
import { hasRounds, runMedians } from './run-medians.js';
import type { RunMedians } from './run-medians.js';
import { MAX_ROUNDS } from './pair-rounds.js';

const pct = (x: number): string => `${f(x * 100, 0)}%`;

export function delayedSection(d: DelayedRecord | undefined): string {
  if (!d) return `## Delayed binding behind kube-scheduler (target 4)

Not recorded yet: \`hack/bench/pv-binder.sh --scenario delayed --n 1000\`, then this script.
`;
  const row = (r: DelayedRecord['runs'][number]): string =>
    `| ${r.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${r.claims} | ${r.nodes} | ${r.bound}${r.complete ? '' : ' (incomplete)'} | ${f(r.preBindToBoundMs.p50, 0)} | ${f(r.preBindToBoundMs.p99, 0)} | ${f(r.preBindToBoundMs.max, 0)} | ${f(r.podScheduledMs.p50 / 1000)} / ${f(r.podScheduledMs.p99 / 1000)} | ${f(r.windowSeconds)} | ${f(r.binder.cpuMsPerBinding, 2)} | ${r.binderEventWrites ?? '-'} | ${f(r.binder.peakRssMiB)} | ${pct(r.machineBusyFraction)} |`;
  const t = d.runs.find((r) => r.contender === 'topovol');
  const u = d.runs.find((r) => r.contender === 'upstream');
  return `## Delayed binding behind kube-scheduler (target 4)

\`hack/bench/pv-binder.sh --scenario delayed --n ${d.options.ns.join(',')} --nodes ${d.options.nodes}\`, ${d.date}, same machine kind. Each binder on
a fresh control plane with the real kube-scheduler ${d.runs[0]?.version && u ? `(${u.version})` : ''}, its client unthrottled (qps ${d.options.qps}, burst ${d.options.burst});
${d.options.nodes} Ready nodes (no kubelet), a \`WaitForFirstConsumer\` class of local volumes (1.2 per claim, spread over the
nodes), N claims, then one pod per claim created in a burst (${d.options.concurrency} in flight). kube-scheduler's VolumeBinding
plugin pre-binds a volume to each claim (writes its \`claimRef\`) and waits for the binder to finish; **pre-bind → Bound** is,
per claim, the bench's watch event showing the volume's \`claimRef\` to the one showing the claim \`Bound\`. **Event writes**: the
binder's Event creates and patches over that window (kube-apiserver's \`apiserver_request_total\` for core/v1 Events;
kube-scheduler records its own through events.k8s.io/v1).

| binder | claims | nodes | Bound | pre-bind → Bound p50 ms | p99 ms | max ms | pod create → scheduled p50 / p99 s | first pod → last Bound s | CPU ms/binding | Event writes | peak RSS MiB | busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${d.runs.map(row).join('\n')}
${
    t && u
      ? `\nTopovol/upstream: pre-bind → Bound p50 ${f(t.preBindToBoundMs.p50 / u.preBindToBoundMs.p50, 2)}x, p99 ${f(t.preBindToBoundMs.p99 / u.preBindToBoundMs.p99, 2)}x (target: p99 < 1 s; Topovol's is ${f(t.preBindToBoundMs.p99 / 1000, 2)} s). The scheduler, not the binder, sets the pace here (pods are scheduled at ${f(t.claims / t.windowSeconds)} and ${f(u.claims / u.windowSeconds)} per second); Topovol's CPU per binding is ${f(t.binder.cpuMsPerBinding / u.binder.cpuMsPerBinding, 2)}x upstream's in this scenario (its profile is in \`hack/bench/README.md\`, "Profiling")${t.binderEventWrites && u.binderEventWrites ? `, its Event writes ${f(t.binderEventWrites / u.binderEventWrites, 2)}x (it also says which pods a claim waits for when a pod is created, where upstream says so only at its next re-sync: docs/divergences.md, "Which Events, when")` : ''}, and on two cores that CPU comes off kube-scheduler's and kube-apiserver's share: pod create → scheduled p99 is ${f(t.podScheduledMs.p99 / u.podScheduledMs.p99, 2)}x.\n`
      : ''
  }
![Pre-bind to Bound CDF](benchmarks/delayed-binding-cdf.png)
`;
}

export function podsSection(p: BindingRecord | undefined): string {
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

/** Records from before the rounds (one round of N pairs each) have no count: one round. */
const roundsOf = (x: { rounds?: number }): number => x.rounds ?? 1;

const samplesFlag = (o: { minSamples?: number }): string => (o.minSamples !== undefined ? ` --min-samples ${o.minSamples}` : '');

function roundsText(o: { minSamples?: number }): string {
  return o.minSamples !== undefined
    ? `One round sees few kills (Topovol's binds N pairs between two or three), so the rounds repeat until ${o.minSamples} restarts (handovers, in the next section) were measured, at most ${MAX_ROUNDS}; the plot below shows each binder's first round.`
    : '';
}

function restartRatio(r: RestartRecord): string {
  const t = r.runs.find((x) => x.contender === 'topovol');
  const u = r.runs.find((x) => x.contender === 'upstream');
  if (!t || !u || t.restartToBoundMs.count === 0 || u.restartToBoundMs.count === 0) return '';
  return `\nTopovol/upstream: restart → first Bound p50 ${f(t.restartToBoundMs.p50 / u.restartToBoundMs.p50, 2)}x (target: within 1 s; Topovol's slowest is ${f(t.restartToBoundMs.max / 1000, 2)} s). Node's start and the manager's module graph are about 0.2 s of it (\`hack/bench/README.md\`, "Start-up").\n`;
}

export function restartSection(r: RestartRecord | undefined): string {
  if (!r) return '';
  const row = (x: RestartRecord['runs'][number]): string =>
    `| ${x.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${x.n} | ${roundsOf(x)} | ${x.killEverySeconds} | ${x.bound}${x.complete ? '' : ' (incomplete)'} | ${x.restarts} (${x.restartToBoundMs.count}) | ${f(x.restartToBoundMs.p50, 0)} | ${f(x.restartToBoundMs.p90, 0)} | ${f(x.restartToBoundMs.max, 0)} | ${x.restartsWithoutBinding} | ${f(x.allBoundSeconds)} |`;
  return `## Crash and restart while binding (target 5)

\`hack/bench/pv-binder.sh --scenario restart --n ${r.options.ns.join(',')} --kill-every ${r.options.killEveryMs / 1000}s${samplesFlag(r.options)}\`, ${r.date}. Per round, on a fresh control
plane for each binder: N volumes made \`Available\`, then N claims created at once while the binder is SIGKILLed every
${r.options.killEveryMs / 1000} s and started again at once, without leader election, until every claim is \`Bound\`. ${roundsText(r.options)} **restart →
first Bound** is, per restart, the new process's start to the first claim the bench sees \`Bound\` that the new process
bound itself: its volume's \`claimRef\` first seen after that start (writes the killed process had in flight land
after it died, and are not the new one's). Measured: restarts followed by such a binding in their round.

| binder | N | rounds | kill every s | Bound | restarts (measured) | restart → first Bound p50 ms | p90 ms | max ms | killed before binding | all Bound s (lower median round) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${r.runs.map(row).join('\n')}
${restartRatio(r)}
A newly elected leader is measured in the next section.
`;
}

export function failoverSection(r: FailoverRecord | undefined, restart?: RestartRecord): string {
  if (!r) return '';
  const { leaseMs, renewMs, retryMs } = r.options.lease;
  const term = r.options.stopSignal === 'SIGTERM';
  const stop = term ? 'SIGTERM' : 'kill';
  const row = (x: FailoverRecord['runs'][number]): string =>
    `| ${x.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager'} | ${x.n} | ${roundsOf(x)} | ${x.killEverySeconds} | ${x.bound}${x.complete ? '' : ' (incomplete)'} | ${x.handovers} (${x.acquiredToBoundMs.count}) | ${f(x.acquiredToBoundMs.p50, 0)} | ${f(x.acquiredToBoundMs.p90, 0)} | ${f(x.acquiredToBoundMs.max, 0)} | ${f(x.killedToBoundMs.p50 / 1000, 2)} | ${f(x.allBoundSeconds)} |`;
  const t = r.runs.find((x) => x.contender === 'topovol');
  const u = r.runs.find((x) => x.contender === 'upstream');
  const ratioLine = !t || !u
    ? ''
    : term
      ? `\nTopovol/upstream: SIGTERM → new leader's first Bound p50 ${f(t.killedToBoundMs.p50 / u.killedToBoundMs.p50, 2)}x (Topovol's ${f(t.killedToBoundMs.p50 / 1000, 2)} s, slowest ${f(t.killedToBoundMs.max / 1000, 2)} s; upstream's ${f(u.killedToBoundMs.p50 / 1000, 2)} s; target: a newly elected leader binds within 1 s, and Topovol's slowest from the Lease taken is ${f(t.acquiredToBoundMs.max / 1000, 2)} s). Of Topovol's p50, ${f(t.acquiredToBoundMs.p50 / 1000, 2)} s comes after the Lease is taken; the rest is the old leader's shutdown and the standby's next try for the released Lease, which comes every retry period (${retryMs / 1000} s here, jittered, as client-go's elector). On SIGTERM Topovol lets its in-flight reconciles finish and then releases the Lease (client-go's \`ReleaseOnCancel\`), so the standby takes it at its next retry; kube-controller-manager does not release it (\`leaderElectAndRun\` in \`cmd/kube-controller-manager/app/controllermanager.go\` sets no \`ReleaseOnCancel\`), so its standby waits for the Lease to expire (docs/divergences.md, "Stopping").\n`
      : `\nTopovol/upstream: lease taken → first Bound p50 ${f(t.acquiredToBoundMs.p50 / u.acquiredToBoundMs.p50, 2)}x (target: within 1 s; Topovol's is ${f(t.acquiredToBoundMs.p50 / 1000, 2)} s). Topovol's standby keeps its caches synced while it waits for the Lease, and queues nothing until it leads, when its workers start from keys taken from its caches (docs/architecture.md, start and stop order); kube-controller-manager starts its informers once it leads.\n`;
  return `## ${term ? 'A rolling update' : 'A newly elected leader'} (target 5)

\`hack/bench/pv-binder.sh --scenario failover --n ${r.options.ns.join(',')} --kill-every ${r.options.killEveryMs / 1000}s${samplesFlag(r.options)}${term ? ' --stop-signal SIGTERM' : ''}\`, ${r.date}. Each binder with leader
election on (the same timing for both: lease ${leaseMs / 1000} s, renew deadline ${renewMs / 1000} s, retry ${retryMs / 1000} s) and two
processes, a leader and a standby, ${r.options.minSamples !== undefined ? `in rounds until ${r.options.minSamples} handovers were measured, each round on a fresh control plane` : 'on a fresh control plane'}: N volumes made \`Available\`, then N claims created at once while the leader is
${term ? `sent SIGTERM every ${r.options.killEveryMs / 1000} s and waited for, as a replica set replaces a pod in a rolling update` : `SIGKILLed every ${r.options.killEveryMs / 1000} s`}; once the standby has taken the Lease, a new standby is started (a replica set replacing
its pod; starting it earlier would let two standbys race for the Lease). **lease taken →
first Bound** is, per handover, the bench's watch seeing the Lease's new holder to the first claim seen \`Bound\` after it;
**${stop} → new leader's first Bound** adds ${term ? "the old leader's shutdown and, unless it released the Lease, the wait for the Lease to expire" : 'the wait for the old lease to expire, which the lease timing sets'}.

| binder | N | rounds | ${stop} every s | Bound | handovers (measured) | lease taken → first Bound p50 ms | p90 ms | max ms | ${stop} → new leader's first Bound p50 s | all Bound s (lower median round) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${r.runs.map(row).join('\n')}
${ratioLine}${term ? '' : restartPlot(restart, r)}`;
}

/** The plot of both scenarios (hack/bench/plot-binding.py draws it when both records have their timelines). */
function restartPlot(restart: RestartRecord | undefined, failover: FailoverRecord): string {
  const timed = [restart, failover].filter((x) => x !== undefined).every((x) => x.runs.every((run) => run.boundTimeline !== undefined));
  return timed ? '\n![Claims Bound over time while the binder is killed](benchmarks/restart-failover.png)\n' : '';
}

/** A labelled record of Topovol alone at a large N, read against the main record's largest N. */
export function largeNSection(big: BindingRecord | undefined, main: BindingRecord): string {
  if (!big) return '';
  const runs = big.runs.filter((r) => r.contender === 'topovol');
  if (runs.length === 0) return '';
  const n = Math.max(...runs.map((r) => r.n));
  type Run = BindingRecord['runs'][number];
  // The main record's largest N in the same order, as the median of its rounds.
  const mainMedians = runMedians(main.runs).filter((x) => x.contender === 'topovol');
  const refOf = (r: Run): RunMedians | undefined => mainMedians.filter((x) => x.order === r.order).sort((a, b) => b.n - a.n)[0];
  const ratio = (a: number, b: number): string => `${f(a / b, 2)}x`;
  const row = (r: Run): string => {
    const ref = refOf(r);
    const vs = ref ? `${ratio(r.pairsPerSecond, ref.pairsPerSecond.median)} (N = ${ref.n}) | ${ratio(r.fractionOfCeiling, ref.fractionOfCeiling.median)}` : '- | -';
    return `| ${r.order} | ${r.n} | ${r.bound}${r.complete ? '' : ' (incomplete)'} | ${f(r.firstBoundSeconds)} | ${f(r.allBoundSeconds)} | ${f(r.pairsPerSecond)} | ${f(r.ceiling.writesPerSecond, 0)} | ${pct(r.fractionOfCeiling)} | ${f(r.binder.cpuMsPerBinding, 2)} | ${f(r.binder.peakRssMiB)} | ${vs} | ${pct(r.machineBusyFraction)} |`;
  };
  const standing = (r: Run): string[] => {
    const ref = refOf(r);
    if (!ref) return [];
    return [
      `- ${r.order}, N = ${r.n}: first binding ${f(r.firstBoundSeconds)} s (target ≤ 2 s: ${verdict(f(r.firstBoundSeconds), (v) => v <= 2)}); ${ratio(r.pairsPerSecond, ref.pairsPerSecond.median)} the pairs/s and ${ratio(r.fractionOfCeiling, ref.fractionOfCeiling.median)} the fraction of the ceiling of N = ${ref.n} (target: no slowdown), with the ceiling itself at ${ratio(r.ceiling.writesPerSecond, ref.ceilingWritesPerSecond.median)} of ${ref.rounds > 1 ? `N = ${ref.n}'s (the median of its ${ref.rounds} runs)` : "that run's"}. Peak RSS ${f(r.binder.peakRssMiB)} MiB against ${f(ref.peakRssMiB.median)} MiB there${r.n > ref.n ? `: ${f(((r.binder.peakRssMiB - ref.peakRssMiB.median) * 1024) / (r.n - ref.n), 1)} KiB for each pair more (target 3: say how it grows)` : ''}.`,
    ];
  };
  return `## Topovol at N = ${n.toLocaleString('en-US')} (targets 1 and 3)

\`hack/bench/pv-binder.sh --n ${big.options.ns.join(',')} --order ${big.options.orders.length > 1 ? 'both' : big.options.orders[0]} --only topovol --label=${big.options.label}\`, ${big.date}, same machine
kind and flags.${big.note ? ` ${big.note}` : ''} Topovol alone: upstream's binder, which searches the volumes for every pending claim on
each 15 s re-sync, was not run at this N. **pairs/s vs the largest N above** compares with the same order
in the main record (target: no slowdown with N), and **of ceiling vs it** the fractions of the ceiling:
the ceiling falls as kube-apiserver and etcd store more, so that ratio is the binder's own scaling; the
other columns are those of the table above.

| order | N | bound | first s | all s | pairs/s | ceiling writes/s | of ceiling | CPU ms/binding | peak RSS MiB | pairs/s vs the largest N above | of ceiling vs it | busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${runs.map(row).join('\n')}

${runs.flatMap(standing).join('\n')}${cpuSplit(big)}
`;
}

/** Where the CPU of a binding went, per process, at the largest N (records before the split have none). */
export function cpuSplit(rec: BindingRecord): string {
  const nmax = Math.max(...rec.runs.map((r) => r.n));
  const rows = runMedians(rec.runs)
    .filter((m) => m.n === nmax)
    .flatMap((m) => {
      const c = m.cpuMsByProcess;
      if (!c) return [];
      const name = m.contender === 'topovol' ? 'Topovol' : 'kube-controller-manager';
      return [`| ${m.order} | ${name} | ${f(c.binder, 2)} | ${f(c.apiserver, 2)} | ${f(c.etcd, 2)} | ${f(c.bench, 2)} | ${pct(c.binder / (c.binder + c.apiserver + c.etcd + c.bench))} |`];
    });
  if (rows.length === 0) return '';
  return `

CPU per binding by process at N = ${nmax}${hasRounds(rec.runs) ? ', the median of each over the rounds' : ''} (kube-apiserver's and etcd's include the bench's creates in
binder-first; the ceiling's writes cost them less, because it keeps ${rec.options.concurrency} writes in flight and etcd
batches concurrent writes: \`hack/bench/README.md\`, "Where the machine's CPU goes"):

| order | binder | binder ms | kube-apiserver ms | etcd ms | bench ms | binder's share |
| --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}`;
}
