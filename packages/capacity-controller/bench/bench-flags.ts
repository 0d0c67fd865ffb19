import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import type { PoolLayout } from './bench-objects.js';

export type ContenderName = 'topovol' | 'upstream';

export interface BenchOptions {
  nodes: number;
  classes: number;
  /** Volume changes per kind (provisioned, outside): half create a volume, half delete it again. */
  changes: number;
  /** Also measure volumes made outside the provisioner (a static PV). */
  outside: boolean;
  /** Both contenders' --capacity-poll-interval. */
  pollIntervalMs: number;
  /** The at-rest window over which API requests are counted. */
  quietMs: number;
  /** After start-up before the first change, and after the last change before the quiet window: lets refreshes settle. */
  settleMs: number;
  /** The changes of one round start at random offsets within this window. */
  spreadMs: number;
  /** Of the offsets: the same for both contenders. */
  seed: number;
  /** Per change: past it the change counts as not seen. 0: twice the poll interval plus a minute. */
  changeTimeoutMs: number;
  pools: PoolLayout;
  /** Contenders to run, in order, each on a fresh control plane. */
  only: ContenderName[];
  startConcurrency: number;
  topovolFlags: string[];
  upstreamFlags: string[];
  record: boolean;
  help: boolean;
}

/** The flags every capacity bench has: the contenders, their poll interval, the schedule and the quiet window. */
export const COMMON_SPECS: readonly FlagSpec[] = [
  { name: 'poll-interval', type: 'duration', default: 60_000, help: 'Both contenders\' --capacity-poll-interval (both default to 1m).' },
  { name: 'quiet-window', type: 'duration', default: 6 * 60_000, help: 'At rest, API requests and GetCapacity calls of each contender are counted over this window (see hack/bench/README.md for why 6m); capacity-labels.sh skips it at 0.' },
  { name: 'settle', type: 'duration', default: 30_000, help: 'Wait once every object is published before the first change, between rounds, and after the last change before the quiet window.' },
  { name: 'seed', type: 'int', default: 1, help: 'Seed of the random offsets (the same schedule for both contenders).' },
  { name: 'change-timeout', type: 'duration', default: 0, help: 'Per change, from t0: a later update counts as not seen. 0: twice --poll-interval plus 1m.' },
  {
    name: 'only',
    type: 'string',
    default: '',
    help: "Run one contender: 'topovol' or 'upstream' (empty: both, Topovol first).",
    validate: (v) => (['', 'topovol', 'upstream'].includes(String(v)) ? undefined : "must be 'topovol' or 'upstream'"),
  },
  { name: 'topovol-flag', type: 'stringList', default: [], help: 'Extra flag for every topovol-controller-manager (repeatable).' },
  { name: 'upstream-flag', type: 'stringList', default: [], help: 'Extra flag for every external-provisioner with capacity (repeatable).' },
];

/** What COMMON_SPECS parse to, with --spread (each bench's own) defaulting to the poll interval. */
export type CommonOptions = Pick<BenchOptions, 'pollIntervalMs' | 'quietMs' | 'settleMs' | 'spreadMs' | 'seed' | 'changeTimeoutMs' | 'only' | 'topovolFlags' | 'upstreamFlags'>;

export function commonOptions(values: Record<string, unknown>): CommonOptions {
  const pollIntervalMs = Number(values['poll-interval']);
  if (pollIntervalMs < 1_000) throw new FlagError('--poll-interval must be at least 1s');
  const timeout = Number(values['change-timeout']);
  const only = String(values.only);
  return {
    pollIntervalMs,
    quietMs: Number(values['quiet-window']),
    settleMs: Number(values.settle),
    spreadMs: Number(values.spread) > 0 ? Number(values.spread) : pollIntervalMs,
    seed: Number(values.seed),
    changeTimeoutMs: timeout > 0 ? timeout : 2 * pollIntervalMs + 60_000,
    only: only === '' ? ['topovol', 'upstream'] : [only as ContenderName],
    topovolFlags: values['topovol-flag'] as string[],
    upstreamFlags: values['upstream-flag'] as string[],
  };
}

const SPECS: readonly FlagSpec[] = [
  { name: 'nodes', type: 'int', default: 50, help: 'Nodes, each with its own CSI driver instance and its own capacity instance per contender.', validate: atLeast(1) },
  { name: 'classes', type: 'int', default: 5, help: 'StorageClasses of the driver (WaitForFirstConsumer): one CSIStorageCapacity object per node and class.', validate: atLeast(1) },
  { name: 'changes', type: 'int', default: 20, help: 'Volume changes timed per kind: half create a 1Gi volume on a node, half delete those again; at most two per node (fewer nodes lower it).', validate: atLeast(2) },
  { name: 'outside', type: 'bool', default: true, help: 'Also time volumes made outside the provisioner (a static PV created and deleted, the driver\'s figure changed with it).' },
  {
    name: 'spread',
    type: 'duration',
    default: 0,
    help: 'The changes of one round (the creates, then the deletes) start at random offsets within this window, each on its own node, so they sample the whole poll cycle. 0: the poll interval.',
  },
  {
    name: 'pools',
    type: 'string',
    default: 'per-class',
    help: "per-class: each class has its own pool on every node, so a volume changes one object; shared: the classes share one pool per node, so a volume changes every class's object on its node.",
    validate: (v) => (['per-class', 'shared'].includes(String(v)) ? undefined : "must be 'per-class' or 'shared'"),
  },
  { name: 'start-concurrency', type: 'int', default: 4, help: 'Instances started at once.', validate: atLeast(1) },
  ...COMMON_SPECS,
  { name: 'record', type: 'bool', default: true, help: 'Write hack/bench/results/capacity-per-node-<date>.md and .json, and capacity-per-node-<pools>-latest.json.' },
];

export function benchHelp(): string {
  return [
    'usage: hack/bench/capacity.sh [flags]',
    '',
    "Per-node storage capacity (KEP-1472): Topovol's capacity loop with --capacity-node-name against the CSI",
    'external-provisioner v6.3.0 with --node-deployment --enable-capacity, one instance per node, each contender on',
    'a fresh etcd + kube-apiserver. Prints the time from a volume change to the updated CSIStorageCapacity object',
    'and the API requests per minute at rest, with the ratios.',
    '',
    formatHelp(SPECS),
  ].join('\n');
}

export function parseBenchFlags(argv: readonly string[]): BenchOptions {
  const { values, help, positional } = parseFlags(SPECS, argv);
  if (positional.length > 0) throw new FlagError(`unexpected argument "${positional[0]!}": flags only`);
  return {
    ...commonOptions(values),
    nodes: Number(values.nodes),
    classes: Number(values.classes),
    // Even, and each create (with its delete) on a node of its own, so concurrent changes never share a driver.
    changes: 2 * Math.min(Math.floor(Number(values.changes) / 2), Number(values.nodes)),
    outside: values.outside === true,
    pools: String(values.pools) as PoolLayout,
    startConcurrency: Number(values['start-concurrency']),
    record: values.record === true,
    help,
  };
}
