import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import type { ContenderName } from './bench-flags.js';

export interface LabelsBenchOptions {
  nodes: number;
  zones: number;
  classes: number;
  /** Nodes moved to a zone of their own (a new segment), each on a node of its own, then moved back. */
  moves: number;
  pollIntervalMs: number;
  quietMs: number;
  settleMs: number;
  spreadMs: number;
  seed: number;
  changeTimeoutMs: number;
  only: ContenderName[];
  topovolFlags: string[];
  upstreamFlags: string[];
  record: boolean;
  help: boolean;
}

const SPECS: readonly FlagSpec[] = [
  { name: 'nodes', type: 'int', default: 50, help: 'Nodes, spread round-robin over the zones.', validate: atLeast(2) },
  { name: 'zones', type: 'int', default: 5, help: 'Zones (topology segments) the nodes start in: one CSIStorageCapacity object per zone and class.', validate: atLeast(1) },
  { name: 'classes', type: 'int', default: 5, help: 'StorageClasses of the driver (WaitForFirstConsumer), sharing one pool.', validate: atLeast(1) },
  { name: 'moves', type: 'int', default: 10, help: 'Nodes relabelled into a zone of their own (a new segment), each a different node; later moved back (the segment goes).', validate: atLeast(1) },
  { name: 'poll-interval', type: 'duration', default: 60_000, help: 'Both contenders\' --capacity-poll-interval (both default to 1m).' },
  { name: 'quiet-window', type: 'duration', default: 6 * 60_000, help: 'At rest, API requests and GetCapacity calls are counted over this window (0: skip).' },
  { name: 'settle', type: 'duration', default: 30_000, help: 'Wait once every object is published before the first move, between the rounds, and before the quiet window.' },
  { name: 'spread', type: 'duration', default: 0, help: 'The moves of one round start at random offsets within this window. 0: the poll interval.' },
  { name: 'seed', type: 'int', default: 1, help: 'Seed of the random offsets (the same schedule for both contenders).' },
  { name: 'change-timeout', type: 'duration', default: 0, help: 'Per move, from the label write: a later update counts as not seen. 0: twice --poll-interval plus 1m.' },
  {
    name: 'only',
    type: 'string',
    default: '',
    help: "Run one contender: 'topovol' or 'upstream' (empty: both, Topovol first).",
    validate: (v) => (['', 'topovol', 'upstream'].includes(String(v)) ? undefined : "must be 'topovol' or 'upstream'"),
  },
  { name: 'topovol-flag', type: 'stringList', default: [], help: 'Extra flag for topovol-controller-manager (repeatable).' },
  { name: 'upstream-flag', type: 'stringList', default: [], help: 'Extra flag for external-provisioner (repeatable).' },
  { name: 'record', type: 'bool', default: true, help: 'Write hack/bench/results/capacity-labels-<date>.md and capacity-labels-latest.json.' },
];

export function labelsBenchHelp(): string {
  return [
    'usage: hack/bench/capacity-labels.sh [flags]',
    '',
    "Node label changes (KEP-1472, central deployment): Topovol's capacity loop against the CSI external-provisioner",
    'v6.3.0 with --enable-capacity, one instance of each for the whole cluster, segments from the nodes\' zone labels,',
    'each contender on a fresh etcd + kube-apiserver. Prints the time from a node label change to the CSIStorageCapacity',
    'objects of the new segment (and to their removal), and the API requests and GetCapacity calls at rest, with ratios.',
    '',
    formatHelp(SPECS),
  ].join('\n');
}

export function parseLabelsBenchFlags(argv: readonly string[]): LabelsBenchOptions {
  const { values, help, positional } = parseFlags(SPECS, argv);
  if (positional.length > 0) throw new FlagError(`unexpected argument "${positional[0]!}": flags only`);
  const nodes = Number(values.nodes);
  const zones = Number(values.zones);
  const moves = Number(values.moves);
  // A zone keeps a node while its moved ones are away, so the moves change no other segment.
  if (moves > nodes - zones) throw new FlagError(`--moves ${moves}: at most --nodes minus --zones (${nodes - zones}), so every zone keeps a node`);
  const pollIntervalMs = Number(values['poll-interval']);
  if (pollIntervalMs < 1_000) throw new FlagError('--poll-interval must be at least 1s');
  const timeout = Number(values['change-timeout']);
  const only = String(values.only);
  return {
    nodes,
    zones,
    classes: Number(values.classes),
    moves,
    pollIntervalMs,
    quietMs: Number(values['quiet-window']),
    settleMs: Number(values.settle),
    spreadMs: Number(values.spread) > 0 ? Number(values.spread) : pollIntervalMs,
    seed: Number(values.seed),
    changeTimeoutMs: timeout > 0 ? timeout : 2 * pollIntervalMs + 60_000,
    only: only === '' ? ['topovol', 'upstream'] : [only as ContenderName],
    topovolFlags: values['topovol-flag'] as string[],
    upstreamFlags: values['upstream-flag'] as string[],
    record: values.record === true,
    help,
  };
}
