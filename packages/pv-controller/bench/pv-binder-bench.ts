// The pv-binder benchmark: binds N static PV/PVC pairs with Topovol's pv-binder and with upstream kube-controller-manager's
// persistentvolume-binder-controller (pkg/controller/volume/persistentvolume), each on a fresh
// control plane in the same run, in each order asked for, and prints throughput, the fraction of
// the API server's write ceiling (measured on each run's control plane), CPU, memory and latency
// side by side. Not a test: nothing here asserts a speed. Run it through hack/bench/pv-binder.sh.
import path from 'node:path';
import { configureLogging, parseCommandLine } from '@topovol/shared';
import { repoRoot } from '@topovol/testing';
import { benchHelp, parseBenchFlags } from './bench-flags.js';
import { formatReport, recordResults } from './bench-report.js';
import type { BindingRun } from './binding-run.js';
import { runBinderFirst } from './run-contender.js';
import { runObjectsFirst } from './run-objects-first.js';
import { staticRunPlan } from './static-run-plan.js';
import { formatDelayed, recordDelayed } from './delayed-report.js';
import { runDelayed } from './run-delayed.js';
import type { DelayedRun } from './run-delayed.js';
import { formatRestart, runRestart } from './run-restart.js';
import type { RestartRecord, RestartRun } from './run-restart.js';
import { writeRecord, recordedOptions } from './bench-report.js';
import { FAILOVER_LEASE, failoverRecordPrefix, formatFailover, runFailover } from './run-failover.js';
import type { FailoverRecord, FailoverRun } from './run-failover.js';
import { machineLine } from '@topovol/testing';

async function main(argv: string[]): Promise<number> {
  const opts = parseCommandLine(argv, (a) => parseBenchFlags(a), benchHelp);
  if (typeof opts === 'number') return opts;
  // The bench's own informers should not chatter over the report.
  configureLogging('warn', 'text');
  if (opts.scenario === 'delayed') {
    const delayed: DelayedRun[] = [];
    for (const n of opts.ns) for (const name of opts.only) delayed.push(await runDelayed(name, n, opts.nodes, opts));
    process.stdout.write(`\n${formatDelayed(delayed)}\n`);
    if (opts.record) process.stdout.write(`\nresults: ${path.relative(process.cwd(), recordDelayed(path.join(repoRoot(), 'hack', 'bench', 'results'), delayed, opts))}\n`);
    return delayed.every((r) => r.complete) ? 0 : 1;
  }
  if (opts.scenario === 'restart') {
    const restarts: RestartRun[] = [];
    for (const n of opts.ns) for (const name of opts.only) restarts.push(await runRestart(name, n, opts.killEveryMs, opts));
    process.stdout.write(`\n${formatRestart(restarts)}\n`);
    if (opts.record) {
      const record: RestartRecord = { benchmark: 'pv-binder-restart', date: new Date().toISOString(), machine: machineLine(), options: recordedOptions(opts), runs: restarts };
      process.stdout.write(`\nresults: ${path.relative(process.cwd(), writeRecord(path.join(repoRoot(), 'hack', 'bench', 'results'), 'restart', record, new Date()))}\n`);
    }
    return restarts.every((r) => r.complete) ? 0 : 1;
  }
  if (opts.scenario === 'failover') {
    const failovers: FailoverRun[] = [];
    for (const n of opts.ns) for (const name of opts.only) failovers.push(await runFailover(name, n, opts.killEveryMs, opts));
    process.stdout.write(`\n${formatFailover(failovers)}\n`);
    if (opts.record) {
      const record: FailoverRecord = { benchmark: 'pv-binder-failover', date: new Date().toISOString(), machine: machineLine(), options: { ...recordedOptions(opts), lease: FAILOVER_LEASE }, runs: failovers };
      process.stdout.write(`\nresults: ${path.relative(process.cwd(), writeRecord(path.join(repoRoot(), 'hack', 'bench', 'results'), failoverRecordPrefix(opts.stopSignal), record, new Date()))}\n`);
    }
    return failovers.every((r) => r.complete) ? 0 : 1;
  }
  const runs: BindingRun[] = [];
  for (const p of staticRunPlan(opts)) {
    const run = p.order === 'objects-first' ? await runObjectsFirst(p.contender, p.n, opts) : await runBinderFirst(p.contender, p.n, opts);
    runs.push(p.round !== undefined ? { ...run, round: p.round } : run);
    process.stderr.write(`\n${formatReport(runs.slice(-1), opts).split('\n').slice(0, 2).join('\n')}\n\n`);
  }
  process.stdout.write(`\n${formatReport(runs, opts)}\n`);
  if (opts.record) {
    const file = recordResults(path.join(repoRoot(), 'hack', 'bench', 'results'), runs, opts);
    process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)} (and the -latest.json next to it); docs/benchmarks.md: hack/bench/benchmarks-doc.sh\n`);
  }
  return runs.every((r) => r.complete) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
