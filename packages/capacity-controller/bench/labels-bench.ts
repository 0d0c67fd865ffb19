// The node-label benchmark (KEP-1472 central deployment): Topovol's capacity loop against the CSI
// external-provisioner v6.3.0 with --enable-capacity and no --node-deployment, one publisher for
// the cluster each, segments from the nodes' zone labels, each contender on its own fresh etcd +
// kube-apiserver, one after the other. Prints the time from a node label change to the
// CSIStorageCapacity objects of the new segment (and to their removal) and the requests at rest,
// with the ratios. Not a test: the exit status is non-zero only when the harness itself failed.
// Run it through hack/bench/capacity-labels.sh.
import path from 'node:path';
import { configureLogging, parseCommandLine } from '@topovol/shared';
import { csiBinaries } from '@topovol/testing/csi-test-driver';
import { machineLine, repoRoot } from '@topovol/testing';
import { recordReport } from './bench-report.js';
import { versions } from './bench-versions.js';
import { labelsBenchHelp, parseLabelsBenchFlags } from './labels-flags.js';
import { formatLabelsReport, labelsRecord, writeLabelsRecord } from './labels-record.js';
import { runLabelsContender } from './labels-run.js';
import type { LabelsRun } from './labels-run.js';

async function main(argv: string[]): Promise<number> {
  const opts = parseCommandLine(argv, (a) => parseLabelsBenchFlags(a), labelsBenchHelp);
  if (typeof opts === 'number') return opts;
  configureLogging('warn', 'text');
  const date = new Date();
  const { 'csi-provisioner': provisionerBinary } = await csiBinaries(['csi-provisioner']);
  const runs: LabelsRun[] = [];
  for (const name of opts.only) runs.push(await runLabelsContender(name, opts, provisionerBinary));
  const report = { date, machine: machineLine(), versions: await versions(), opts, runs };
  const text = formatLabelsReport(report);
  process.stdout.write(`\n${text}\n`);
  if (opts.record) {
    const dir = path.join(repoRoot(), 'hack', 'bench', 'results');
    const file = recordReport(dir, text, date, 'capacity-labels');
    const json = writeLabelsRecord(dir, labelsRecord(report, file));
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
