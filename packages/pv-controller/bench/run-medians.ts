// With --repeat, each N, order and contender is run several times on fresh control planes; one
// run's fraction of the ceiling moves by ±10% with nothing changed (hack/bench/README.md, "How much
// one run says"), so reports and docs/benchmarks.md read the median of the rounds and show their range.
import { cpuMsPerBindingByProcess } from './binding-run.js';
import type { BindingRun, Order } from './binding-run.js';
import type { CpuSplit } from './bench-cluster.js';
import type { ContenderName } from './bench-flags.js';

/** The median of the rounds (the mean of the two middle ones for an even count) and their range. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]! };
}

/** One contender, order and N over its rounds. */
export interface RunMedians {
  contender: ContenderName;
  order: Order;
  n: number;
  rounds: number;
  /** Every round bound every claim. */
  complete: boolean;
  clockFrom: string;
  firstBoundSeconds: Spread;
  allBoundSeconds: Spread;
  pairsPerSecond: Spread;
  ceilingWritesPerSecond: Spread;
  fractionOfCeiling: Spread;
  cpuMsPerBinding: Spread;
  peakRssMiB: Spread;
  /** binder-first only. */
  p99Ms?: Spread;
  /** Per process, the median of each over the rounds that recorded the split. */
  cpuMsByProcess?: CpuSplit;
}

/** Groups runs by contender, order and N (in the order they first appear) and takes the median of each figure. */
export function runMedians(runs: readonly BindingRun[]): RunMedians[] {
  const groups = new Map<string, BindingRun[]>();
  for (const r of runs) {
    const key = `${r.contender}/${r.order}/${r.n}`;
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  return [...groups.values()].map((g) => {
    const first = g[0]!;
    const of = (pick: (r: BindingRun) => number): Spread => spread(g.map(pick));
    const latencies = g.flatMap((r) => (r.latencyMs ? [r.latencyMs.p99] : []));
    const splits = g.flatMap((r) => {
      const c = cpuMsPerBindingByProcess(r);
      return c ? [c] : [];
    });
    return {
      contender: first.contender,
      order: first.order,
      n: first.n,
      rounds: g.length,
      complete: g.every((r) => r.complete),
      clockFrom: first.clockFrom,
      firstBoundSeconds: of((r) => r.firstBoundSeconds),
      allBoundSeconds: of((r) => r.allBoundSeconds),
      pairsPerSecond: of((r) => r.pairsPerSecond),
      ceilingWritesPerSecond: of((r) => r.ceiling.writesPerSecond),
      fractionOfCeiling: of((r) => r.fractionOfCeiling),
      cpuMsPerBinding: of((r) => r.binder.cpuMsPerBinding),
      peakRssMiB: of((r) => r.binder.peakRssMiB),
      p99Ms: latencies.length > 0 ? spread(latencies) : undefined,
      cpuMsByProcess:
        splits.length > 0
          ? {
              binder: spread(splits.map((c) => c.binder)).median,
              apiserver: spread(splits.map((c) => c.apiserver)).median,
              etcd: spread(splits.map((c) => c.etcd)).median,
              bench: spread(splits.map((c) => c.bench)).median,
            }
          : undefined,
    };
  });
}

/** True for a record of --repeat rounds (the bench numbers runs only when it repeats them). */
export function hasRounds(runs: readonly BindingRun[]): boolean {
  return runs.some((r) => r.round !== undefined);
}
