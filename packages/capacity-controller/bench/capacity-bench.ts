// The per-node capacity benchmark: Topovol's capacity loop with --capacity-node-name against the
// CSI external-provisioner v6.3.0 with --node-deployment --enable-capacity (KEP-1472's per-node
// deployment), one instance per node of each, each contender on its own fresh etcd +
// kube-apiserver, one after the other. Prints the time from a volume change to the updated
// CSIStorageCapacity object and the API requests per minute at rest, with the ratios. Not a test:
// it asserts nothing; the exit status is non-zero only when the harness itself failed. Run it
// through hack/bench/capacity.sh.
import path from 'node:path';
import { configureLogging, parseCommandLine } from '@topovol/shared';
import { csiBinaries } from '@topovol/testing/csi-test-driver';
import { machineLine, repoRoot } from '@topovol/testing';
import { versions } from './bench-versions.js';
import { benchHelp, parseBenchFlags } from './bench-flags.js';
import { benchRecord, writeBenchRecord } from './bench-record.js';
import { formatReport, recordReport } from './bench-report.js';
import { runContender } from './run-contender.js';
import type { ContenderRun } from './run-contender.js';

async function main(argv: string[]): Promise<number> {
  const opts = parseCommandLine(argv, (a) => parseBenchFlags(a), benchHelp);
  if (typeof opts === 'number') return opts;
  // The bench's own informers should not chatter over the report.
  configureLogging('warn', 'text');
  const date = new Date();
  const { 'csi-provisioner': provisionerBinary } = await csiBinaries(['csi-provisioner']);
  const runs: ContenderRun[] = [];
  for (const name of opts.only) runs.push(await runContender(name, opts, provisionerBinary));
  const report = { date, machine: machineLine(), versions: await versions(), opts, runs };
  const text = formatReport(report);
  process.stdout.write(`\n${text}\n`);
  if (opts.record) {
    const dir = path.join(repoRoot(), 'hack', 'bench', 'results');
    const file = recordReport(dir, text, date);
    const json = writeBenchRecord(dir, benchRecord(report, file), date);
    process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)}, ${path.relative(process.cwd(), json)}\n`);
  }
  return runs.some((r) => r.failure) ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
