// The rollback benchmark: plays kubernetes/kubernetes #94217 end to end on real components
// (etcd + kube-apiserver, kube-scheduler, kube-controller-manager's PV/PVC protection, the CSI
// external-provisioner per node against Topovol's CSI test driver, and topovol-controller-manager
// with pv-binder and rollback) and prints how long a pod stuck by a half-provisioned set of
// volumes takes to run elsewhere. Not a test: it prints times and asserts none; the exit status is
// non-zero only when the harness itself failed. Run it through hack/bench/rollback.sh.
import os from 'node:os';
import path from 'node:path';
import { configureLogging, parseCommandLine } from '@topovol/shared';
import { csiBinaries } from '@topovol/testing/csi-test-driver';
import { binaryVersion, childCommandLines, controlPlaneBinaries, machineLine, repoRoot, topovolVersion } from '@topovol/testing';
import { benchHelp, parseBenchFlags } from './bench-flags.js';
import type { RollbackBenchOptions } from './bench-flags.js';
import { startCluster } from './bench-cluster.js';
import { formatReport, recordReport } from './bench-report.js';
import type { BenchRun } from './bench-report.js';
import { runStory } from './story.js';
import type { StoryResult } from './story.js';

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

async function versions(): Promise<string[]> {
  const cp = await controlPlaneBinaries(['etcd', 'kube-apiserver', 'kube-scheduler', 'kube-controller-manager']);
  const csi = await csiBinaries(['csi-provisioner']);
  const named = (name: string, bin: string): string => `${name} ${binaryVersion(bin).replace(/^(Kubernetes|etcd Version:|csi-provisioner)\s*/, '')}`;
  return [
    named('kube-apiserver', cp['kube-apiserver']),
    named('etcd', cp.etcd),
    named('kube-scheduler', cp['kube-scheduler']),
    named('kube-controller-manager', cp['kube-controller-manager']),
    named('csi-provisioner', csi['csi-provisioner']),
    topovolVersion(),
  ];
}

async function runAll(opts: RollbackBenchOptions): Promise<{ stories: StoryResult[]; commandLines: string[]; twinWindowNote?: string }> {
  const cluster = await startCluster(opts.managerArgs);
  const stories: StoryResult[] = [];
  try {
    // Only the directories the bench and ControlPlane create (mkdtemp), not a checkout that happens to live in /tmp.
    const tmp = new RegExp(`${os.tmpdir().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/topovol-(?:cp|bench-rollback)-[A-Za-z0-9]{6}`, 'g');
    const commandLines = childCommandLines().map((l) => l.replace(tmp, '$TMP'));
    for (let run = 1; run <= opts.runs; run++) {
      say(`story ${run}/${opts.runs}`);
      stories.push(await runStory(cluster, 'rollback', run, { windowMs: opts.timeoutMs }));
      say(`story ${run}: ${stories[stories.length - 1]!.detail}`);
    }
    if (!opts.twin) return { stories, commandLines };
    // A rollback that must not come is only ruled out once the measured runs' rollbacks would have come.
    const slowest = Math.max(0, ...stories.flatMap((s) => (s.at.rollback !== undefined && s.at.failed !== undefined ? [s.at.rollback - s.at.failed] : [])));
    const windowMs = slowest + opts.twinWindowMs;
    const twinWindowNote = `watched for the slowest rollback above, ${(slowest / 1000).toFixed(1)} s, plus --twin-window ${opts.twinWindowMs / 1000} s`;
    say(`safety twin, watched ${(windowMs / 1000).toFixed(0)} s past the failure`);
    const twin = await runStory(cluster, 'twin', 1, { windowMs });
    stories.push(twin);
    say(`safety twin: ${twin.detail}`);
    return { stories, commandLines, twinWindowNote };
  } finally {
    await cluster.stop();
  }
}

async function main(argv: string[]): Promise<number> {
  const opts = parseCommandLine(argv, (a) => parseBenchFlags(a), benchHelp);
  if (typeof opts === 'number') return opts;
  // The bench's own informers should not chatter over the report.
  configureLogging('warn', 'text');
  const date = new Date();
  const { stories, commandLines, twinWindowNote } = await runAll(opts);
  const run: BenchRun = { date, machine: machineLine(), versions: await versions(), managerArgs: opts.managerArgs, commandLines, stories, ...(twinWindowNote ? { twinWindowNote } : {}) };
  const text = formatReport(run);
  process.stdout.write(`\n${text}\n`);
  if (opts.record) {
    const file = recordReport(path.join(repoRoot(), 'hack', 'bench', 'results'), text, run);
    process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)}\n`);
  }
  return stories.some((s) => s.outcome === 'no-story') ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
