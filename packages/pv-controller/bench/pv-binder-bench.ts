// The pv-binder benchmark: binds N static PV/PVC pairs with Topovol's pv-binder and with upstream kube-controller-manager's
// persistentvolume-binder-controller (pkg/controller/volume/persistentvolume), each on a fresh
// control plane in the same run, and prints throughput, latency, memory and CPU side by side.
// Not a test: nothing here asserts a speed. Run it through hack/bench/pv-binder.sh.
import path from 'node:path';
import { configureLogging, parseCommandLine } from '@topovol/shared';
import { repoRoot } from '@topovol/shared/testing';
import { benchHelp, parseBenchFlags } from './bench-flags.js';
import { formatReport, recordResults } from './bench-report.js';
import { runContender } from './run-contender.js';
import { formatObjectsFirst, runObjectsFirst } from './run-objects-first.js';
import type { ObjectsFirstResult } from './run-objects-first.js';
import type { ContenderResult } from './run-contender.js';

async function main(argv: string[]): Promise<number> {
  const opts = parseCommandLine(argv, (a) => parseBenchFlags(a), benchHelp);
  if (typeof opts === 'number') return opts;
  // The bench's own informers should not chatter over the report.
  configureLogging('warn', 'text');
  if (opts.order === 'objects-first') {
    const firsts: ObjectsFirstResult[] = [];
    for (const name of opts.only) firsts.push(await runObjectsFirst(name, opts));
    process.stdout.write(`\n${formatObjectsFirst(firsts)}\n`);
    return firsts.every((r) => r.complete) ? 0 : 1;
  }
  const results: ContenderResult[] = [];
  for (const name of opts.only) results.push(await runContender(name, opts));
  process.stdout.write(`\n${formatReport(results, opts)}\n`);
  if (opts.record) {
    const file = recordResults(path.join(repoRoot(), 'hack', 'bench', 'results'), results, opts);
    process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)} (and pv-binder-latest.json)\n`);
  }
  return results.every((r) => r.complete) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
