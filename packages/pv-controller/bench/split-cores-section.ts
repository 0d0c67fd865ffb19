// docs/benchmarks.md's view of target 1 with the API server on cores of its own
// (`pv-binder.sh --split-cores`, core-split.ts), rendered from its own record.
import { f, withRange } from './bench-report.js';
import type { BindingRecord } from './bench-report.js';
import { cpuMsPerBindingByProcess } from './binding-run.js';
import type { BindingRun } from './binding-run.js';
import { coreSplit } from './core-split.js';
import { runMedians, spread } from './run-medians.js';
import type { Spread } from './run-medians.js';
import { WRITES_PER_BINDING } from './write-ceiling.js';

const name = (c: BindingRun['contender']): string => (c === 'topovol' ? 'Topovol' : 'kube-controller-manager');

/** The CPUs the record's machine line gives ("2 CPUs (...)"). */
const cpusOf = (machine: string): number => Number.parseInt(machine, 10);

/** Per-run figures the medians table does not carry: what a binding and a ceiling write cost the server side, and how busy it was. */
interface ServerSide {
  /** kube-apiserver + etcd ms per binding while the binder bound. */
  perBinding: Spread;
  /** kube-apiserver + etcd ms per ceiling write, times four: the same four writes as the ceiling sends them. */
  perFourCeilingWrites: Spread;
  /** Share of the server's CPUs kube-apiserver and etcd used while the binder bound. */
  busy: Spread;
}

function serverSide(runs: readonly BindingRun[], serverCpus: number): ServerSide {
  const perBinding = runs.flatMap((r) => {
    const c = cpuMsPerBindingByProcess(r);
    return c ? [c.apiserver + c.etcd] : [];
  });
  const busy = runs.flatMap((r) => (r.cpuSeconds && r.allBoundSeconds > 0 ? [(r.cpuSeconds.apiserver + r.cpuSeconds.etcd) / r.allBoundSeconds / serverCpus] : []));
  const ceiling = runs.flatMap((r) => (r.ceiling.serverCpuMsPerWrite !== undefined ? [r.ceiling.serverCpuMsPerWrite * WRITES_PER_BINDING] : []));
  return { perBinding: spread(perBinding), perFourCeilingWrites: spread(ceiling), busy: spread(busy) };
}

export function splitCoresSection(split: BindingRecord | undefined): string {
  if (!split) return '';
  // The split the runs recorded; records from before they did: the halves of the machine's CPUs.
  const cores = split.runs.find((r) => r.cores)?.cores ?? coreSplit(Array.from({ length: cpusOf(split.machine) }, (_, i) => i));
  const serverCpus = cores.serverCpus;
  const cpu = (list: string): string => `${list.includes(',') || list.includes('-') ? 'CPUs' : 'CPU'} ${list}`;
  const theirs = serverCpus === 1 ? 'their CPU' : 'their CPUs';
  const medians = runMedians(split.runs);
  const groupOf = (m: (typeof medians)[number]): BindingRun[] => split.runs.filter((r) => r.contender === m.contender && r.order === m.order && r.n === m.n);
  const rows = medians.map((m) => {
    const s = serverSide(groupOf(m), serverCpus);
    return `| ${m.order} | ${name(m.contender)} | ${m.n} | ${m.rounds}${m.complete ? '' : ' (incomplete)'} | ${withRange(m.pairsPerSecond)} | ${withRange(m.ceilingWritesPerSecond, 0)} | ${withRange(m.fractionOfCeiling, 0, 100, '%')} | ${withRange(m.cpuMsPerBinding, 2)} | ${withRange(s.perBinding, 2)} | ${withRange(s.perFourCeilingWrites, 2)} | ${withRange(s.busy, 0, 100, '%')} |`;
  });
  const lines = medians
    .filter((m) => m.contender === 'topovol')
    .map((m) => {
      const s = serverSide(groupOf(m), serverCpus);
      return `- ${m.order}, N = ${m.n}: ${f(m.fractionOfCeiling.median * 100, 0)}% of the ceiling, with kube-apiserver and etcd using ${f(s.busy.median * 100, 0)}% of ${theirs} while it bound (medians of the rounds, each figure's own).`;
    });
  // Per round, not per median: the server's cost per write moves from one control plane to the next.
  const topovolRuns = split.runs.filter((r) => r.contender === 'topovol');
  const busy = serverSide(topovolRuns, serverCpus).busy;
  const upstreamBusy = serverSide(split.runs.filter((r) => r.contender === 'upstream'), serverCpus).busy;
  const span = (b: Spread): string => `${f(b.min * 100, 0)}-${f(b.max * 100, 0)}%`;
  // A round above its ceiling, read on its own figures: did its bindings cost the server less per write than its ceiling's patches?
  const over = topovolRuns.filter((r) => r.fractionOfCeiling > 1);
  const overCheaper = over.filter((r) => {
    const c = cpuMsPerBindingByProcess(r);
    return c !== undefined && r.ceiling.serverCpuMsPerWrite !== undefined && c.apiserver + c.etcd < r.ceiling.serverCpuMsPerWrite * WRITES_PER_BINDING;
  }).length;
  const saturated = Number.isFinite(busy.min) && busy.min >= 0.95;
  const reading = Number.isFinite(busy.min)
    ? `\nIn every round of Topovol's, kube-apiserver and etcd kept ${theirs} ${span(busy)} busy${Number.isFinite(upstreamBusy.min) ? ` (in kube-controller-manager's: ${span(upstreamBusy)})` : ''}${saturated ? ': with cores of its own, the binder\'s CPU is not what the API server waits for' : ''}. The fraction of the ceiling still moves from round to round with what kube-apiserver and etcd spend per write on that control plane, on the binder's writes (a volume's and a claim's spec and status, one in flight per binder worker${split.options.orders.includes('binder-first') ? '; in binder-first the window also holds the bench\'s claim creates' : ''}) and on the ceiling's merge patches (${split.options.concurrency} in flight)${over.length > 0 ? `; ${over.length === 1 ? 'one round' : `${over.length} rounds`} bound more than ${over.length === 1 ? 'its' : 'their'} own ceiling allows, ${overCheaper === over.length ? `${over.length === 1 ? 'its' : 'their'} bindings costing the server less per write than ${over.length === 1 ? 'its' : 'their'} ceiling's patches did` : 'not explained by the server\'s CPU per write alone'}` : ''}.\n`
    : '';
  const o = split.options;
  return `## The API server on cores of its own (target 1, a second view)

\`hack/bench/pv-binder.sh --n ${o.ns.join(',')} --order ${o.orders.length > 1 ? 'both' : o.orders[0]}${(o.repeat ?? 1) > 1 ? ` --repeat ${o.repeat}` : ''} --split-cores\`, ${split.date}, same machine kind and flags as the
static runs above, with etcd and kube-apiserver pinned to ${cpu(cores.server)} and the binder and the bench (its creates, its
watch and the ceiling's writes) to ${cpu(cores.clients)} (\`taskset\`; each process inherits it at start). The ceiling is
measured on the same split. Target 1 stands as measured above, on the shared cores; this view shows what
bounds it when the binder's CPU does not come off the API server's. **server ms/binding** is
kube-apiserver's and etcd's CPU per binding while the binder bound; **server ms, 4 ceiling writes** their
CPU per write over the ceiling's rounds, times four; **server busy** their share of ${cpu(cores.server)} while the binder bound.

| order | binder | N | rounds | pairs/s | ceiling writes/s | of ceiling | binder CPU ms/binding | server ms/binding | server ms, 4 ceiling writes | server busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

${lines.join('\n')}
${reading}`;
}
