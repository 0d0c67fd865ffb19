// The order of the static scenario's runs: per N and order, round after round, every contender in
// each round, so a slow spell of the machine falls on all of them rather than on one.
import type { BenchOptions, ContenderName } from './bench-flags.js';
import type { Order } from './binding-run.js';

export interface PlannedRun {
  n: number;
  order: Order;
  contender: ContenderName;
  /** 1-based; undefined without --repeat, so single-round records keep their shape. */
  round: number | undefined;
}

export function staticRunPlan(opts: Pick<BenchOptions, 'ns' | 'orders' | 'only' | 'repeat'>): PlannedRun[] {
  const plan: PlannedRun[] = [];
  for (const n of opts.ns) {
    for (const order of opts.orders) {
      for (let round = 1; round <= opts.repeat; round++) {
        for (const contender of opts.only) plan.push({ n, order, contender, round: opts.repeat > 1 ? round : undefined });
      }
    }
  }
  return plan;
}
