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
  const cpus = cpusOf(split.machine);
  const cores = coreSplit(cpus);
  const serverCpus = Math.floor(cpus / 2);
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
      return `- ${m.order}, N = ${m.n}: ${f(m.fractionOfCeiling.median * 100, 0)}% of the ceiling, with kube-apiserver and etcd using ${f(s.busy.median * 100, 0)}% of their ${serverCpus === 1 ? 'CPU' : 'CPUs'} while it bound; they spent ${f(s.perBinding.median, 2)} ms on each binding against ${f(s.perFourCeilingWrites.median, 2)} ms on four of the ceiling's writes.`;
    });
  // Per round, not per median: the server's cost per write moves from one control plane to the next.
  const busyRange = (c: BindingRun['contender']): string | undefined => {
    const b = serverSide(split.runs.filter((r) => r.contender === c), serverCpus).busy;
    return Number.isFinite(b.min) ? `${f(b.min * 100, 0)}-${f(b.max * 100, 0)}%` : undefined;
  };
  const topovolBusy = busyRange('topovol');
  const upstreamBusy = busyRange('upstream');
  const over = split.runs.filter((r) => r.contender === 'topovol' && r.fractionOfCeiling > 1).length;
  const reading = topovolBusy
    ? `\nIn every round of Topovol's, kube-apiserver and etcd kept their CPU ${topovolBusy} busy${upstreamBusy ? ` (kube-controller-manager's: ${upstreamBusy}, its one claim worker waiting on each write)` : ''}: on cores of its own the binder is not what the API server waits for. What is left between it and the ceiling is what kube-apiserver and etcd spend on a binding's four writes (spec and status of a volume and a claim, one in flight per binder worker) against four of the ceiling's merge patches (32 in flight), and that moves from one control plane to the next, as the ranges show${over > 0 ? `; ${over === 1 ? 'a round' : `${over} rounds`} above 100% had a ceiling whose patches cost the server more per write than that round's bindings did` : ''}.\n`
    : '';
  const o = split.options;
  return `## The API server on cores of its own (target 1, a second view)

\`hack/bench/pv-binder.sh --n ${o.ns.join(',')} --order ${o.orders.length > 1 ? 'both' : o.orders[0]}${(o.repeat ?? 1) > 1 ? ` --repeat ${o.repeat}` : ''} --split-cores\`, ${split.date}, same machine kind and flags as the
static runs above, with etcd and kube-apiserver pinned to CPU ${cores.server} and the binder and the bench (its creates, its
watch and the ceiling's writes) to CPU ${cores.clients} (\`taskset\`; each process inherits it at start). The ceiling is
measured on the same split. Target 1 stands as measured above, on the shared cores; this view shows what
bounds it when the binder's CPU does not come off the API server's. **server ms/binding** is
kube-apiserver's and etcd's CPU per binding while the binder bound; **server ms, 4 ceiling writes** their
CPU per write over the ceiling's rounds, times four; **server busy** their share of CPU ${cores.server} while the binder bound.

| order | binder | N | rounds | pairs/s | ceiling writes/s | of ceiling | binder CPU ms/binding | server ms/binding | server ms, 4 ceiling writes | server busy |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

${lines.join('\n')}
${reading}`;
}
