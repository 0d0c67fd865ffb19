import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import { COMMON_SPECS, commonOptions } from './bench-flags.js';
import type { CommonOptions } from './bench-flags.js';

export interface LabelsBenchOptions extends CommonOptions {
  nodes: number;
  zones: number;
  classes: number;
  /** Nodes moved to a zone of their own (a new segment), each on a node of its own, then moved back. */
  moves: number;
  record: boolean;
  help: boolean;
}

const SPECS: readonly FlagSpec[] = [
  { name: 'nodes', type: 'int', default: 50, help: 'Nodes, spread round-robin over the zones.', validate: atLeast(2) },
  { name: 'zones', type: 'int', default: 5, help: 'Zones (topology segments) the nodes start in: one CSIStorageCapacity object per zone and class.', validate: atLeast(1) },
  { name: 'classes', type: 'int', default: 5, help: 'StorageClasses of the driver (WaitForFirstConsumer), sharing one pool.', validate: atLeast(1) },
  { name: 'moves', type: 'int', default: 10, help: 'Nodes relabelled into a zone of their own (a new segment), each a different node; later moved back (the segment goes).', validate: atLeast(1) },
  { name: 'spread', type: 'duration', default: 0, help: 'The moves of one round start at random offsets within this window. 0: the poll interval.' },
  ...COMMON_SPECS,
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
  return { ...commonOptions(values), nodes, zones, classes: Number(values.classes), moves, record: values.record === true, help };
}
