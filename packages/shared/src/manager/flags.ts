import { formatDuration, parseDuration } from './duration.js';

export type FlagType = 'string' | 'int' | 'float' | 'bool' | 'duration' | 'stringList';
/** Durations are held in milliseconds. */
export type FlagValue = string | number | boolean | string[];

export interface FlagSpec {
  name: string;
  type: FlagType;
  default: FlagValue;
  help: string;
  /** Returns a reason when the (parsed) value is unacceptable. */
  validate?: (v: FlagValue) => string | undefined;
}

/** A bad command line: the manager prints the message on one line and exits non-zero. */
export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

export const KNOWN_CONTROLLERS_HELP = 'pv-binder, zonal-pv-upgrade, capacity, rollback';

const atLeast =
  (min: number) =>
  (v: FlagValue): string | undefined =>
    (v as number) < min ? `must be at least ${min}` : undefined;

const oneOf =
  (...allowed: string[]) =>
  (v: FlagValue): string | undefined =>
    allowed.includes(v as string) ? undefined : `must be one of ${allowed.join(', ')}`;

const bindAddress = (v: FlagValue): string | undefined => {
  try {
    parseBindAddress(v as string);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};

/** kube-controller-manager-style flags of the manager itself; controllers add their own. */
export const MANAGER_FLAGS: FlagSpec[] = [
  { name: 'kubeconfig', type: 'string', default: '', help: 'Path to a kubeconfig. If empty, $KUBECONFIG, else the in-cluster configuration.' },
  { name: 'kube-api-qps', type: 'float', default: 20, help: 'QPS to use while talking with kube-apiserver; 0 or negative means unthrottled.' },
  { name: 'kube-api-burst', type: 'int', default: 30, help: 'Burst to use while talking with kube-apiserver.', validate: atLeast(1) },
  {
    name: 'controllers',
    type: 'stringList',
    default: ['*'],
    help: `A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables it. All controllers: ${KNOWN_CONTROLLERS_HELP}.`,
  },
  { name: 'leader-elect', type: 'bool', default: true, help: 'Start a leader election client and gain leadership (one Lease per controller) before running each loop.' },
  {
    name: 'leader-elect-namespace',
    type: 'string',
    default: '',
    help: 'Namespace of the leader election Leases. If empty, the namespace of the pod (from its ServiceAccount), else kube-system.',
  },
  { name: 'leader-elect-lease-duration', type: 'duration', default: 15_000, help: 'How long non-leaders wait after observing a renewal before they may take over the lease.' },
  { name: 'leader-elect-renew-deadline', type: 'duration', default: 10_000, help: 'How long the leader keeps trying to renew before it gives up leadership (and exits).' },
  { name: 'leader-elect-retry-period', type: 'duration', default: 2_000, help: 'How long clients wait between tries of acquiring and renewing leadership.' },
  { name: 'metrics-bind-address', type: 'string', default: ':8080', help: "Address the /metrics endpoint binds to; '0' disables it.", validate: bindAddress },
  { name: 'health-probe-bind-address', type: 'string', default: ':8081', help: "Address the /healthz and /readyz endpoints bind to; '0' disables them.", validate: bindAddress },
  { name: 'log-level', type: 'string', default: 'info', help: 'Log level: error, warn, info or debug.', validate: oneOf('error', 'warn', 'info', 'debug') },
  { name: 'log-format', type: 'string', default: 'json', help: 'Log format: json or text.', validate: oneOf('json', 'text') },
  { name: 'concurrent-workers', type: 'int', default: 4, help: 'Number of reconciles each controller runs concurrently.', validate: atLeast(1) },
  { name: 'shutdown-timeout', type: 'duration', default: 30_000, help: 'How long a graceful shutdown waits for in-flight reconciles before exiting anyway.' },
  { name: 'dry-run', type: 'bool', default: false, help: 'Decide and report (logs, metrics) what each controller would do, without writing.' },
];

export interface ParsedFlags {
  values: Record<string, FlagValue>;
  help: boolean;
  positional: string[];
}

function parseValue(spec: FlagSpec, raw: string): FlagValue {
  const bad = (why: string): FlagError => new FlagError(`invalid value "${raw}" for flag --${spec.name}: ${why}`);
  switch (spec.type) {
    case 'string':
      return raw;
    case 'bool':
      if (/^(true|1|t)$/i.test(raw)) return true;
      if (/^(false|0|f)$/i.test(raw)) return false;
      throw bad('not a boolean');
    case 'int':
      if (!/^[+-]?\d+$/.test(raw.trim())) throw bad('not an integer');
      return Number(raw);
    case 'float': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw bad('not a number');
      return n;
    }
    case 'duration':
      try {
        return parseDuration(raw);
      } catch (err) {
        throw bad((err as Error).message);
      }
    case 'stringList':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
  }
}

/** Parses --flag=value, --flag value, bare --bool and --bool=false (one or two dashes). */
export function parseFlags(specs: FlagSpec[], argv: string[]): ParsedFlags {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const values: Record<string, FlagValue> = Object.fromEntries(specs.map((s) => [s.name, s.default]));
  const positional: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === 'help' || name === 'h') {
      help = true;
      continue;
    }
    const spec = byName.get(name);
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    let raw: string;
    if (eq >= 0) raw = body.slice(eq + 1);
    else if (spec.type === 'bool') raw = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      raw = next;
      i++;
    }
    const v = parseValue(spec, raw);
    const why = spec.validate?.(v);
    if (why) throw new FlagError(`invalid value "${raw}" for flag --${name}: ${why}`);
    values[name] = v;
  }
  return { values, help, positional };
}

export interface ManagerOptions {
  kubeconfig: string;
  kubeApiQps: number;
  kubeApiBurst: number;
  controllers: string[];
  leaderElect: boolean;
  leaderElectNamespace: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  metricsBindAddress: string;
  healthProbeBindAddress: string;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  logFormat: 'json' | 'text';
  concurrentWorkers: number;
  shutdownTimeoutMs: number;
  dryRun: boolean;
  help: boolean;
  /** Values of controller-specific flags, by flag name. */
  extra: Record<string, FlagValue>;
}

export function parseManagerFlags(argv: string[], extraSpecs: FlagSpec[] = []): ManagerOptions {
  const { values: v, help, positional } = parseFlags([...MANAGER_FLAGS, ...extraSpecs], argv);
  if (positional.length) throw new FlagError(`unexpected argument: ${positional[0]}`);
  const opts: ManagerOptions = {
    kubeconfig: v.kubeconfig as string,
    kubeApiQps: v['kube-api-qps'] as number,
    kubeApiBurst: v['kube-api-burst'] as number,
    controllers: v.controllers as string[],
    leaderElect: v['leader-elect'] as boolean,
    leaderElectNamespace: v['leader-elect-namespace'] as string,
    leaseDurationMs: v['leader-elect-lease-duration'] as number,
    renewDeadlineMs: v['leader-elect-renew-deadline'] as number,
    retryPeriodMs: v['leader-elect-retry-period'] as number,
    metricsBindAddress: v['metrics-bind-address'] as string,
    healthProbeBindAddress: v['health-probe-bind-address'] as string,
    logLevel: v['log-level'] as ManagerOptions['logLevel'],
    logFormat: v['log-format'] as ManagerOptions['logFormat'],
    concurrentWorkers: v['concurrent-workers'] as number,
    shutdownTimeoutMs: v['shutdown-timeout'] as number,
    dryRun: v['dry-run'] as boolean,
    help,
    extra: Object.fromEntries(extraSpecs.map((s) => [s.name, v[s.name]!])),
  };
  // client-go's leaderelection.NewLeaderElector checks the same ordering.
  if (!(opts.retryPeriodMs > 0)) throw new FlagError('--leader-elect-retry-period must be greater than zero');
  if (!(opts.renewDeadlineMs > opts.retryPeriodMs * 1.2)) {
    throw new FlagError('--leader-elect-renew-deadline must be greater than 1.2 × --leader-elect-retry-period');
  }
  if (!(opts.leaseDurationMs > opts.renewDeadlineMs)) throw new FlagError('--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline');
  return opts;
}

/** kube semantics of --controllers: '*' = all on-by-default, 'x' enables, '-x' disables (and wins). */
export function resolveControllers(requested: string[], known: string[], disabledByDefault: string[] = []): string[] {
  const on = new Set<string>();
  const off = new Set<string>();
  let star = false;
  for (const item of requested) {
    const neg = item.startsWith('-');
    const name = neg ? item.slice(1) : item;
    if (name === '*' && !neg) {
      star = true;
      continue;
    }
    if (!known.includes(name)) throw new FlagError(`unknown controller "${name}" in --controllers (known: ${known.join(', ')})`);
    (neg ? off : on).add(name);
  }
  return known.filter((n) => !off.has(n) && (on.has(n) || (star && !disabledByDefault.includes(n))));
}

/** "0" disables; ":8080" binds all interfaces; "127.0.0.1:0" picks a free port. */
export function parseBindAddress(s: string): { host: string; port: number } | undefined {
  if (s === '0') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`"${s}" is not host:port, :port or 0`);
  return { host: m[1] ?? m[2] ?? '', port };
}

function formatDefault(spec: FlagSpec): string {
  switch (spec.type) {
    case 'duration':
      return formatDuration(spec.default as number);
    case 'stringList':
      return `[${(spec.default as string[]).join(',')}]`;
    case 'string':
      return spec.default === '' ? '' : `"${spec.default as string}"`;
    default:
      return String(spec.default);
  }
}

/** kube-style help: one flag per entry, with its type and default. */
export function formatHelp(specs: FlagSpec[]): string {
  const typeName: Record<FlagType, string> = { string: 'string', int: 'int', float: 'float', bool: '', duration: 'duration', stringList: 'strings' };
  const rows = [...specs]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((s) => {
      const left = `      --${s.name}${typeName[s.type] ? ` ${typeName[s.type]}` : ''}`;
      const def = formatDefault(s);
      return { left, right: `${s.help}${def !== '' ? ` (default ${def})` : ''}` };
    });
  rows.push({ left: '  -h, --help', right: 'Show this help.' });
  const width = Math.max(...rows.map((r) => r.left.length)) + 3;
  return rows.map((r) => r.left.padEnd(width) + r.right).join('\n');
}
