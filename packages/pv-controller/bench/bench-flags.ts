import { atLeast, FlagError, formatHelp, parseFlags } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';

export type ContenderName = 'topovol' | 'upstream';

export interface BenchOptions {
  n: number;
  qps: number;
  burst: number;
  /** Contenders to run, in order. */
  only: ContenderName[];
  namespaces: number;
  /** Client requests the bench keeps in flight while creating objects. */
  concurrency: number;
  /** Per phase (volumes Available, claims Bound): past it the run is reported as incomplete. */
  timeoutMs: number;
  /** Write hack/bench/results/pv-binder-<date>.json and pv-binder-latest.json. */
  record: boolean;
  topovolFlags: string[];
  upstreamFlags: string[];
  /** binder-first: start the binder, then create volumes, then claims; objects-first: create all, then start it. */
  order: 'binder-first' | 'objects-first';
  help: boolean;
}

const SPECS: readonly FlagSpec[] = [
  { name: 'n', type: 'int', default: 10_000, help: 'Static PV/PVC pairs to bind per contender.', validate: atLeast(1) },
  { name: 'qps', type: 'float', default: 1000, help: "Both binders' --kube-api-qps." },
  { name: 'burst', type: 'int', default: 2000, help: "Both binders' --kube-api-burst.", validate: atLeast(1) },
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
  { name: 'record', type: 'bool', default: true, help: 'Write the results JSON under hack/bench/results (pv-binder-<date>.json and pv-binder-latest.json).' },
  { name: 'topovol-flag', type: 'stringList', default: [], help: 'Extra flag for topovol-controller-manager (repeatable), e.g. --topovol-flag=--concurrent-workers=8.' },
  { name: 'upstream-flag', type: 'stringList', default: [], help: 'Extra flag for kube-controller-manager (repeatable).' },
  {
    name: 'order',
    type: 'string',
    default: 'binder-first',
    help: "'binder-first': the binder runs while volumes, then claims are created; 'objects-first': all N pairs exist before it starts (times from its start).",
    validate: (v) => (['binder-first', 'objects-first'].includes(String(v)) ? undefined : "must be 'binder-first' or 'objects-first'"),
  },
];

export function benchHelp(): string {
  return `usage: hack/bench/pv-binder.sh [N] [flags]\n\nBinds N static PV/PVC pairs with Topovol's pv-binder and upstream kube-controller-manager's\npersistentvolume-binder-controller, each on a fresh etcd + kube-apiserver, and prints the ratios.\n\n${formatHelp(SPECS)}`;
}

/** Flags as kube tools take them; one bare number is N, as `pv-binder.sh 2000`. */
export function parseBenchFlags(argv: readonly string[]): BenchOptions {
  const { values, help, positional } = parseFlags(SPECS, argv);
  if (positional.length > 1 || (positional.length === 1 && !/^\d+$/.test(positional[0]!))) {
    throw new FlagError(`unexpected argument "${positional.join(' ')}": the only positional argument is N`);
  }
  const only = String(values.only);
  const n = positional.length === 1 ? Number(positional[0]) : Number(values.n);
  if (!(n >= 1)) throw new FlagError('N must be at least 1');
  return {
    n,
    qps: Number(values.qps),
    burst: Number(values.burst),
    only: only === '' ? ['topovol', 'upstream'] : [only as ContenderName],
    namespaces: Number(values.namespaces),
    concurrency: Number(values.concurrency),
    timeoutMs: Number(values.timeout),
    record: values.record === true,
    topovolFlags: values['topovol-flag'] as string[],
    upstreamFlags: values['upstream-flag'] as string[],
    order: String(values.order) as BenchOptions['order'],
    help,
  };
}
