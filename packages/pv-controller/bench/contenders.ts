import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { controlPlaneBinaries, ManagedProcess, repoRoot } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';

export interface StartedBinder {
  process: ManagedProcess;
  /** The command line, as recorded in the results. */
  argv: string[];
  version: string;
  /** Settings that shape the comparison besides the flags (e.g. upstream's resync period). */
  notes: string[];
}

/** Starts one contender's binder against a control plane; its log goes into logDir. */
export async function startContender(name: ContenderName, cp: ControlPlane, opts: BenchOptions, logDir: string): Promise<StartedBinder> {
  return name === 'topovol' ? startTopovol(cp, opts, logDir) : startUpstream(cp, opts, logDir);
}

function startTopovol(cp: ControlPlane, opts: BenchOptions, logDir: string): StartedBinder {
  const root = repoRoot();
  const argv = [
    path.join(root, 'bin', 'topovol-controller-manager.js'),
    '--controllers=pv-binder',
    '--leader-elect=false',
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--kube-api-qps=${opts.qps}`,
    `--kube-api-burst=${opts.burst}`,
    '--metrics-bind-address=0',
    '--health-probe-bind-address=0',
    ...opts.topovolFlags,
  ];
  // Node's own flags for a profile (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"): NODE_OPTIONS refuses --cpu-prof.
  const nodeFlags = (process.env.TOPOVOL_BENCH_NODE_FLAGS ?? '').split(' ').filter((a) => a !== '');
  const process_ = new ManagedProcess({ name: 'topovol-controller-manager', command: process.execPath, args: [...nodeFlags, ...argv], logFile: path.join(logDir, 'topovol-controller-manager.log'), cwd: root });
  return {
    process: process_,
    argv: [process.execPath, ...nodeFlags, ...argv],
    version: topovolVersion(root),
    notes: [`node ${process.version}`, 'defaults: --concurrent-pv-binder-syncs=16, JSON wire format'],
  };
}

async function startUpstream(cp: ControlPlane, opts: BenchOptions, logDir: string): Promise<StartedBinder> {
  const bin = (await controlPlaneBinaries(['kube-controller-manager']))['kube-controller-manager'];
  const argv = [
    '--controllers=persistentvolume-binder-controller',
    `--kubeconfig=${cp.kubeconfigPath}`,
    '--leader-elect=false',
    `--kube-api-qps=${opts.qps}`,
    `--kube-api-burst=${opts.burst}`,
    // No serving endpoint: nothing scrapes it here, and it would need its own certificates.
    '--secure-port=0',
    '--use-service-account-credentials=false',
    `--service-account-private-key-file=${cp.serviceAccountKeyFile}`,
    `--root-ca-file=${cp.caFile}`,
    ...opts.upstreamFlags,
  ];
  const process_ = new ManagedProcess({ name: 'kube-controller-manager', command: bin, args: argv, logFile: path.join(logDir, 'kube-controller-manager.log') });
  return {
    process: process_,
    argv: [bin, ...argv],
    version: execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim(),
    notes: ['defaults: --pvclaimbinder-sync-period=15s (periodic resync of every claim and volume), protobuf wire format, one claim worker and one volume worker'],
  };
}

/** Package version plus the commit the compiled code was built from (dirty when the tree has edits). */
function topovolVersion(root: string): string {
  try {
    const rev = execFileSync('git', ['-C', root, 'describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
    return `topovol ${rev}`;
  } catch {
    return 'topovol (no git)';
  }
}
