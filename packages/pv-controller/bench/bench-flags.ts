import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';

export type ContenderName = 'topovol' | 'upstream';

/** failover: SIGKILL is a crash, SIGTERM a rolling update. */
export type StopSignal = 'SIGKILL' | 'SIGTERM';

export interface BenchOptions {
  /** Pair counts to run, each with every order and contender. */
  ns: number[];
  qps: number;
  burst: number;
  /** Contenders to run, in order. */
  only: ContenderName[];
  namespaces: number;
  /** Client requests the bench keeps in flight while creating objects. */
  concurrency: number;
  /** Per phase (volumes Available, claims Bound): past it the run is reported as incomplete. */
  timeoutMs: number;
  /** No claim Bound for this long: the run is reported as incomplete (a binder that stopped making progress). */
  stallMs: number;
  /** Merge patches sent to measure the API server's write ceiling after each run. */
  ceilingWrites: number;
  /** Write hack/bench/results/pv-binder-<date>.json and pv-binder-latest.json. */
  record: boolean;
  /** Static runs: record as pv-binder-<label>-*.json instead, beside the main record. */
  label: string;
  topovolFlags: string[];
  upstreamFlags: string[];
  /** binder-first: start the binder, then create volumes, then claims; objects-first: create all, then start it. */
  orders: ('binder-first' | 'objects-first')[];
  /** static: N pre-provisioned pairs bound by the binder alone; delayed: N WaitForFirstConsumer claims whose pods the real kube-scheduler places. */
  scenario: 'static' | 'delayed' | 'restart' | 'failover';
  /** objects-first: also one pod per claim, stored before the binder starts (memory with pods cached). */
  pods: boolean;
  /** restart: SIGKILL the binder this often while it binds. */
  killEveryMs: number;
  /** failover: how the leader is stopped every --kill-every: SIGKILL (a crash) or SIGTERM (a rolling update). */
  stopSignal: StopSignal;
  /** restart, failover: repeat rounds of N fresh pairs until this many restarts (handovers) were measured. */
  minSamples: number;
  /** delayed: nodes the local volumes are spread over. */
  nodes: number;
  /** static: rounds of every N, order and contender (contenders alternating), each on a fresh control plane; reports read the median. */
  repeat: number;
  /** static: etcd and kube-apiserver on the first half of the CPUs, the binder and the bench on the rest (core-split.ts). */
  splitCores: boolean;
  help: boolean;
}

const SPECS: readonly FlagSpec[] = [
  {
    name: 'scenario',
    type: 'string',
    default: 'static',
    help: "'static': N pre-provisioned pairs, the binder alone; 'delayed': N WaitForFirstConsumer claims of local volumes whose pods the real kube-scheduler places in a burst (scheduler pre-bind to Bound); 'restart': N pairs bound while the binder is SIGKILLed and restarted every --kill-every; 'failover': the same with leader election, a standby taking over after each SIGKILL of the leader.",
    validate: (v) => (['static', 'delayed', 'restart', 'failover'].includes(String(v)) ? undefined : "must be 'static', 'delayed', 'restart' or 'failover'"),
  },
  { name: 'pods', type: 'bool', default: false, help: 'objects-first: also create one pod per claim before the binder starts, so its memory includes the pods it caches.' },
  {
    name: 'stop-signal',
    type: 'string',
    default: 'SIGKILL',
    help: "failover: how the leader is stopped every --kill-every: 'SIGKILL' (a crash: the standby waits for the Lease to expire) or 'SIGTERM' (a rolling update: the process stops as it would when its pod is replaced, and is waited for).",
    validate: (v) => (['SIGKILL', 'SIGTERM'].includes(String(v)) ? undefined : "must be 'SIGKILL' or 'SIGTERM'"),
  },
  { name: 'kill-every', type: 'duration', default: 8000, help: 'restart, failover: SIGKILL the binder (the leader) this often while it binds, and start a new process at once.' },
  {
    name: 'min-samples',
    type: 'int',
    default: 10,
    help: 'restart, failover: repeat the round (N pairs, each round on a fresh control plane) until this many restarts (handovers) were measured, at most 20 rounds.',
    validate: atLeast(1),
  },
  {
    name: 'repeat',
    type: 'int',
    default: 1,
    help: 'static: run every N, order and contender this many times (the contenders alternating, each run on a fresh control plane); the report, the ratios and docs/benchmarks.md read the median of the rounds and show their spread.',
    validate: atLeast(1),
  },
  {
    name: 'split-cores',
    type: 'bool',
    default: false,
    help: "static: pin etcd and kube-apiserver to the first half of the CPUs and the binder and the bench to the rest (taskset), so the binder's CPU does not come off the API server's; the ceiling is measured on the same split. Recorded beside the main record, as pv-binder-split-cores-latest.json.",
  },
  { name: 'nodes', type: 'int', default: 20, help: "delayed: nodes the local volumes are spread over (each allows 110 pods).", validate: atLeast(1) },
  { name: 'n', type: 'string', default: '10000', help: 'Static PV/PVC pairs to bind per contender; a comma-separated list runs each (e.g. 1000,3000,10000).' },
  // Far above what either binder sends, so that neither client is throttled: 1,000 (the default
  // until 2026-12-06) held Topovol's binder at 257 pairs/s, (40,000 writes - the burst) / 1,000 per s
  // (hack/bench/README.md, "The bench's own rate limit").
  { name: 'qps', type: 'float', default: 100000, help: "Both binders' --kube-api-qps (the default throttles neither)." },
  { name: 'burst', type: 'int', default: 200000, help: "Both binders' --kube-api-burst.", validate: atLeast(1) },
  {
    name: 'only',
    type: 'string',
    default: '',
    help: "Run one contender: 'topovol' or 'upstream' (empty: both, Topovol first).",
    validate: (v) => (['', 'topovol', 'upstream'].includes(String(v)) ? undefined : "must be 'topovol' or 'upstream'"),
  },
  { name: 'namespaces', type: 'int', default: 4, help: 'Namespaces the claims are spread over.', validate: atLeast(1) },
  { name: 'concurrency', type: 'int', default: 32, help: 'Create requests the bench keeps in flight.', validate: atLeast(1) },
  { name: 'timeout', type: 'duration', default: 30 * 60_000, help: 'Per phase (volumes Available, claims Bound) before giving up on a contender.' },
  { name: 'stall', type: 'duration', default: 5 * 60_000, help: 'Give up on a contender when no claim became Bound for this long.' },
  { name: 'ceiling-writes', type: 'int', default: 10_000, help: 'Merge patches sent after each run to measure the API server\'s write ceiling on the same control plane.', validate: atLeast(100) },
  {
    name: 'label',
    type: 'string',
    default: '',
    help: 'Static runs: record as pv-binder-<label>-latest.json beside the main record (e.g. --label=100k for a run at another N), so it does not replace it.',
    validate: (v) => (/^[a-z0-9-]*$/.test(String(v)) ? undefined : 'lower-case letters, digits and dashes only'),
  },
  { name: 'record', type: 'bool', default: true, help: 'Write the results JSON under hack/bench/results (pv-binder-<date>.json and pv-binder-latest.json).' },
  { name: 'topovol-flag', type: 'stringList', default: [], help: 'Extra flag for topovol-controller-manager (repeatable), e.g. --topovol-flag=--concurrent-workers=8.' },
  { name: 'upstream-flag', type: 'stringList', default: [], help: 'Extra flag for kube-controller-manager (repeatable).' },
  {
    name: 'order',
    type: 'string',
    default: 'binder-first',
    help: "'binder-first': the binder runs while volumes, then claims are created; 'objects-first': all N pairs exist before it starts (times from its start); 'both'.",
    validate: (v) => (['binder-first', 'objects-first', 'both'].includes(String(v)) ? undefined : "must be 'binder-first', 'objects-first' or 'both'"),
  },
];

export function benchHelp(): string {
  return `usage: hack/bench/pv-binder.sh [N] [flags]\n\nBinds N static PV/PVC pairs (in each order asked for) with Topovol's pv-binder and upstream kube-controller-manager's\npersistentvolume-binder-controller, each on a fresh etcd + kube-apiserver, and prints the ratios.\n\n${formatHelp(SPECS)}`;
}

/** Flags as kube tools take them; one bare number is N, as `pv-binder.sh 2000`. */
export function parseBenchFlags(argv: readonly string[]): BenchOptions {
  const { values, help, positional } = parseFlags(SPECS, argv);
  if (positional.length > 1 || (positional.length === 1 && !/^\d+$/.test(positional[0]!))) {
    throw new FlagError(`unexpected argument "${positional.join(' ')}": the only positional argument is N`);
  }
  const only = String(values.only);
  const ns = (positional.length === 1 ? positional[0]! : String(values.n)).split(',').map((v) => Number(v.trim()));
  if (ns.some((n) => !Number.isInteger(n) || n < 1)) throw new FlagError(`--n: every N must be a whole number of at least 1, got "${String(values.n)}"`);
  const order = String(values.order);
  const scenario = String(values.scenario);
  // A flag another scenario ignores would leave a record that does not say what was measured.
  if (Number(values.repeat) > 1 && scenario !== 'static') throw new FlagError(`--repeat: only the static scenario repeats its runs (${scenario} repeats rounds until --min-samples)`);
  if (values['split-cores'] === true && scenario !== 'static') throw new FlagError(`--split-cores: only the static scenario splits the cores (${scenario} does not)`);
  if (String(values['stop-signal']) !== 'SIGKILL' && scenario !== 'failover') throw new FlagError(`--stop-signal: only the failover scenario stops its leader (${scenario} does not)`);
  return {
    ns,
    qps: Number(values.qps),
    burst: Number(values.burst),
    only: only === '' ? ['topovol', 'upstream'] : [only as ContenderName],
    namespaces: Number(values.namespaces),
    concurrency: Number(values.concurrency),
    timeoutMs: Number(values.timeout),
    stallMs: Number(values.stall),
    ceilingWrites: Number(values['ceiling-writes']),
    record: values.record === true,
    label: String(values.label),
    topovolFlags: values['topovol-flag'] as string[],
    upstreamFlags: values['upstream-flag'] as string[],
    orders: order === 'both' ? ['binder-first', 'objects-first'] : [order as 'binder-first' | 'objects-first'],
    scenario: scenario as BenchOptions['scenario'],
    nodes: Number(values.nodes),
    repeat: Number(values.repeat),
    splitCores: values['split-cores'] === true,
    killEveryMs: Number(values['kill-every']),
    stopSignal: String(values['stop-signal']) as StopSignal,
    minSamples: Number(values['min-samples']),
    pods: values.pods === true,
    help,
  };
}
