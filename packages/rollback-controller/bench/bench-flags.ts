import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';

/** Extra flags for the manager when --manager-args is not given. */
export const MANAGER_ARGS_ENV = 'TOPOVOL_BENCH_MANAGER_ARGS';

export interface RollbackBenchOptions {
  /** Measured stories, each in a fresh namespace and StorageClass. */
  runs: number;
  /** Also run the safety twin once (the node-a volume is in use before the failure). */
  twin: boolean;
  /** The twin is watched this long past the slowest rollback of the measured runs. */
  twinWindowMs: number;
  /** Appended to topovol-controller-manager's command line (the loops keep their defaults otherwise). */
  managerArgs: string[];
  /** Per story, from the failure: past it the story is reported as not recovered. */
  timeoutMs: number;
  /** Write hack/bench/results/rollback-<date>.txt. */
  record: boolean;
  help: boolean;
}

const SPECS: readonly FlagSpec[] = [
  { name: 'runs', type: 'int', default: 3, help: 'Measured runs of the story, each in a fresh namespace; min/median/max are reported.', validate: atLeast(1) },
  { name: 'twin', type: 'bool', default: true, help: 'Also run the safety twin once: the node-a volume is reported in use before the failure, so it must not be rolled back.' },
  { name: 'twin-window', type: 'duration', default: 60_000, help: 'How long past the slowest rollback of the measured runs the twin is watched for a rollback that must not come.' },
  {
    name: 'manager-args',
    type: 'string',
    default: '',
    help: `Extra flags for topovol-controller-manager, space separated, e.g. --manager-args='--rollback-grace-period=5s' (default: $${MANAGER_ARGS_ENV}).`,
  },
  { name: 'timeout', type: 'duration', default: 15 * 60_000, help: 'Per story, from the failure: a story not recovered by then is reported as such.' },
  { name: 'record', type: 'bool', default: true, help: 'Write the report to hack/bench/results/rollback-<date>.txt, and, when every story played out and the safety twin ran, rollback-latest.json, which docs/benchmarks.md is rendered from (hack/bench/benchmarks-doc.sh).' },
];

export function benchHelp(): string {
  return [
    'usage: hack/bench/rollback.sh [flags]',
    '',
    "Plays kubernetes/kubernetes #94217 end to end (kube-scheduler, the CSI external-provisioner per node, Topovol's",
    'pv-binder and rollback loops, on a fresh etcd + kube-apiserver) and prints the time from the failed',
    'provisioning to the pod on another node with both claims Bound there and the first volume deleted.',
    '',
    formatHelp(SPECS),
  ].join('\n');
}

export function parseBenchFlags(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): RollbackBenchOptions {
  const { values, help, positional } = parseFlags(SPECS, argv);
  if (positional.length > 0) throw new FlagError(`unexpected argument "${positional[0]!}": flags only`);
  const raw = String(values['manager-args']) || env[MANAGER_ARGS_ENV] || '';
  const managerArgs = raw.split(/\s+/).filter((a) => a !== '');
  const bare = managerArgs.find((a) => !a.startsWith('--'));
  if (bare) throw new FlagError(`--manager-args: "${bare}" is not a flag; write each as --name=value`);
  return {
    runs: Number(values.runs),
    twin: values.twin === true,
    twinWindowMs: Number(values['twin-window']),
    managerArgs,
    timeoutMs: Number(values.timeout),
    record: values.record === true,
    help,
  };
}
