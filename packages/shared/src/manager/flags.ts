/**
 * The manager's own kube-controller-manager-style flags (MANAGER_FLAGS) and their typed form;
 * each controller may contribute more FlagSpecs of its own. Parsing itself is in flag-parser.ts.
 */
import { BindAddressError, parseBindAddress } from './bind-address.js';
import { formatDuration } from './duration.js';
import { atLeast, FlagError, parseFlags } from './flag-parser.js';
import type { FlagSpec, FlagValue } from './flag-parser.js';

/** The controllers this manager ships, as --controllers knows them (the manager resolves against its registered descriptors). */
export const KNOWN_CONTROLLERS: readonly string[] = ['pv-binder', 'zonal-pv-upgrade', 'capacity', 'rollback'];
export const KNOWN_CONTROLLERS_HELP = KNOWN_CONTROLLERS.join(', ');

/** client-go's leaderelection.JitterFactor: renew deadline must exceed it × the retry period. */
export const LEADER_ELECTION_JITTER = 1.2;

const oneOf =
  (...allowed: string[]) =>
  (v: FlagValue): string | undefined =>
    typeof v === 'string' && allowed.includes(v) ? undefined : `must be one of ${allowed.join(', ')}`;

const bindAddress = (v: FlagValue): string | undefined => {
  try {
    parseBindAddress(String(v));
    return undefined;
  } catch (err) {
    return err instanceof BindAddressError ? err.reason : String(err);
  }
};

/** kube-controller-manager-style flags of the manager itself; controllers add their own. */
export const MANAGER_FLAGS: readonly FlagSpec[] = [
  {
    name: 'kubeconfig',
    type: 'string',
    default: '',
    help: 'Path to a kubeconfig file. If empty, the file named by $KUBECONFIG, else the in-cluster configuration (ServiceAccount token).',
  },
  {
    name: 'kube-api-qps',
    type: 'float',
    default: 20,
    help: 'QPS to use while talking with the kube-apiserver; 0 or negative means unthrottled.',
  },
  {
    name: 'kube-api-burst',
    type: 'int',
    default: 30,
    help: 'Burst to use while talking with the kube-apiserver; must be at least 1.',
    validate: atLeast(1),
  },
  {
    name: 'controllers',
    type: 'stringList',
    default: ['*'],
    help:
      "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', " +
      `'-foo' disables the controller named 'foo' (and wins over '*' and 'foo'). All controllers: ${KNOWN_CONTROLLERS_HELP}.`,
  },
  {
    name: 'leader-elect',
    type: 'bool',
    default: true,
    help: 'Start a leader election client and gain leadership (one Lease per controller) before running each control loop. Enable this when running replicated managers for high availability.',
  },
  {
    name: 'leader-elect-namespace',
    type: 'string',
    default: '',
    help: 'Namespace of the leader election Leases. If empty, the namespace of the pod (from /var/run/secrets/kubernetes.io/serviceaccount/namespace), else kube-system.',
  },
  {
    name: 'leader-elect-lease-duration',
    type: 'duration',
    default: 15_000,
    help: 'The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed Lease. Must be greater than --leader-elect-renew-deadline.',
  },
  {
    name: 'leader-elect-renew-deadline',
    type: 'duration',
    default: 10_000,
    help: `The interval between attempts by the acting leader to renew a leadership slot before it stops leading. Must be greater than ${LEADER_ELECTION_JITTER} × --leader-elect-retry-period and less than --leader-elect-lease-duration.`,
  },
  {
    name: 'leader-elect-retry-period',
    type: 'duration',
    default: 2_000,
    help: 'The duration the clients should wait between attempting acquisition and renewal of a leadership. Must be greater than zero.',
  },
  {
    name: 'metrics-bind-address',
    type: 'string',
    default: ':8443',
    help: "The host:port the /metrics endpoint binds to (':8443' = all interfaces); '0' disables it.",
    validate: bindAddress,
  },
  {
    name: 'metrics-secure',
    type: 'bool',
    default: true,
    help: 'Serve /metrics over HTTPS, each request authenticated (TokenReview) and authorized (SubjectAccessReview: get on the path, as the topovol-metrics-reader ClusterRole grants) by the API server. false serves plain HTTP to anyone who reaches the port.',
  },
  {
    name: 'metrics-cert-path',
    type: 'string',
    default: '',
    help: 'A directory holding tls.crt and tls.key (a mounted kubernetes.io/tls Secret) to serve /metrics with; read again every 10s, so a renewed certificate is served without a restart. Empty: a self-signed certificate made at start.',
  },
  {
    name: 'health-probe-bind-address',
    type: 'string',
    default: ':8081',
    help: "The host:port the /healthz, /livez and /readyz endpoints bind to (':8081' = all interfaces); '0' disables them.",
    validate: bindAddress,
  },
  {
    name: 'log-level',
    type: 'string',
    default: 'info',
    help: 'Log level: one of error, warn, info, debug.',
    validate: oneOf('error', 'warn', 'info', 'debug'),
  },
  {
    name: 'log-format',
    type: 'string',
    default: 'json',
    help: 'Log format: one of json, text.',
    validate: oneOf('json', 'text'),
  },
  {
    name: 'concurrent-workers',
    type: 'int',
    default: 4,
    help: 'Number of objects each controller is allowed to reconcile concurrently (the pv-binder has its own, --concurrent-pv-binder-syncs); must be at least 1.',
    validate: atLeast(1),
  },
  {
    name: 'cache-sync-timeout',
    type: 'duration',
    default: 120_000,
    help: "How long a loop waits for its informers' first list before its readiness check says which resources have not synced (it keeps waiting; other loops are not held up).",
  },
  {
    name: 'shutdown-timeout',
    type: 'duration',
    default: 30_000,
    help: 'How long a graceful shutdown (SIGTERM/SIGINT) waits for in-flight reconciles before exiting anyway.',
  },
  {
    name: 'dry-run',
    type: 'bool',
    default: false,
    help: 'Decide and log/report (logs, Events, metrics) what each controller would do, but do not write to the API server.',
  },
];

// Same unions as logging's LogLevel/LogFormat (not re-declared as exports: the package index re-exports both modules).
type LogLevel = 'error' | 'warn' | 'info' | 'debug';
type LogFormat = 'json' | 'text';

/** The manager's flags, typed. Durations are in milliseconds. */
export interface ManagerOptions {
  kubeconfig: string;
  kubeApiQps: number;
  kubeApiBurst: number;
  /** As given (e.g. ['*', '-capacity']); see resolveControllers. */
  controllers: string[];
  leaderElect: boolean;
  /** '' means: the pod's namespace, else kube-system (resolved by the manager). */
  leaderElectNamespace: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** '0' disables; see parseBindAddress. */
  metricsBindAddress: string;
  /** HTTPS and delegated authentication and authorization on /metrics. */
  metricsSecure: boolean;
  /** '' means a self-signed certificate. */
  metricsCertPath: string;
  healthProbeBindAddress: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  concurrentWorkers: number;
  shutdownTimeoutMs: number;
  cacheSyncTimeoutMs: number;
  dryRun: boolean;
  help: boolean;
  /** Values of the controller-specific (extra) flags, by flag name. */
  extra: Record<string, FlagValue>;
}

/**
 * A numeric controller flag (int, float or duration) from ManagerOptions.extra. The parser fills
 * every flag of the loop's table with its value or default; `fallback` covers a loop set up with
 * options parsed without its table.
 */
export function extraNumber(extra: Record<string, FlagValue>, name: string, fallback: number): number {
  const v = extra[name];
  return typeof v === 'number' ? v : fallback;
}

/**
 * client-go's leaderelection.NewLeaderElector checks: lease duration > renew deadline >
 * JitterFactor × retry period > 0. Returns the first violation, naming the flags.
 */
export function validateLeaderElection(leaseDurationMs: number, renewDeadlineMs: number, retryPeriodMs: number): string | undefined {
  const d = formatDuration;
  if (!(retryPeriodMs > 0)) return `--leader-elect-retry-period (${d(retryPeriodMs)}) must be greater than zero`;
  if (!(renewDeadlineMs > LEADER_ELECTION_JITTER * retryPeriodMs)) {
    return `--leader-elect-renew-deadline (${d(renewDeadlineMs)}) must be greater than ${LEADER_ELECTION_JITTER} × --leader-elect-retry-period (${d(retryPeriodMs)})`;
  }
  if (!(leaseDurationMs > renewDeadlineMs)) {
    return `--leader-elect-lease-duration (${d(leaseDurationMs)}) must be greater than --leader-elect-renew-deadline (${d(renewDeadlineMs)})`;
  }
  return undefined;
}

/**
 * Parses the manager's flags plus the controllers' extra ones. Positional arguments are an error
 * (as in kube-controller-manager), and so are inconsistent leader-election timings when
 * --leader-elect is on. With --help, only syntax is checked.
 */
export function parseManagerFlags(argv: readonly string[], extraSpecs: readonly FlagSpec[] = []): ManagerOptions {
  const { values, help, positional } = parseFlags([...MANAGER_FLAGS, ...extraSpecs], argv);
  if (positional.length > 0 && !help) throw new FlagError(`unexpected argument "${positional[0]!}": topovol-controller-manager takes flags only`);
  const get = (name: string): FlagValue => {
    const v = values[name];
    if (v === undefined) throw new Error(`flag table: --${name} missing`);
    return v;
  };
  const str = (name: string): string => String(get(name));
  const num = (name: string): number => Number(get(name));
  const bool = (name: string): boolean => get(name) === true;
  const list = (name: string): string[] => {
    const v = get(name);
    return Array.isArray(v) ? v : [String(v)];
  };
  const opts: ManagerOptions = {
    kubeconfig: str('kubeconfig'),
    kubeApiQps: num('kube-api-qps'),
    kubeApiBurst: num('kube-api-burst'),
    controllers: list('controllers'),
    leaderElect: bool('leader-elect'),
    leaderElectNamespace: str('leader-elect-namespace'),
    leaseDurationMs: num('leader-elect-lease-duration'),
    renewDeadlineMs: num('leader-elect-renew-deadline'),
    retryPeriodMs: num('leader-elect-retry-period'),
    metricsBindAddress: str('metrics-bind-address'),
    metricsSecure: bool('metrics-secure'),
    metricsCertPath: str('metrics-cert-path'),
    healthProbeBindAddress: str('health-probe-bind-address'),
    logLevel: str('log-level') as LogLevel,
    logFormat: str('log-format') as LogFormat,
    concurrentWorkers: num('concurrent-workers'),
    shutdownTimeoutMs: num('shutdown-timeout'),
    cacheSyncTimeoutMs: num('cache-sync-timeout'),
    dryRun: bool('dry-run'),
    help,
    extra: Object.fromEntries(extraSpecs.map((s) => [s.name, get(s.name)])),
  };
  if (!help && opts.leaderElect) {
    const why = validateLeaderElection(opts.leaseDurationMs, opts.renewDeadlineMs, opts.retryPeriodMs);
    if (why !== undefined) throw new FlagError(why);
  }
  return opts;
}

/**
 * kube semantics of --controllers: '*' enables every known controller except the
 * disabledByDefault ones, 'name' enables one, '-name' disables one (and wins over both). Unknown
 * names, with or without '-', are a FlagError. The result is in `known` order.
 */
export function resolveControllers(requested: readonly string[], known: readonly string[], disabledByDefault: readonly string[] = []): string[] {
  const on = new Set<string>();
  const off = new Set<string>();
  let star = false;
  for (const item of requested) {
    if (item === '*') {
      star = true;
      continue;
    }
    const negated = item.startsWith('-');
    const name = negated ? item.slice(1) : item;
    if (!known.includes(name)) throw new FlagError(`unknown controller "${name}" in --controllers (known: ${known.join(', ')})`);
    (negated ? off : on).add(name);
  }
  return known.filter((n) => !off.has(n) && (on.has(n) || (star && !disabledByDefault.includes(n))));
}
