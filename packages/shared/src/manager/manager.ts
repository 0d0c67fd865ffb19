import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { KubeClient } from '../client/kube-client.js';
import { RunnableGroup } from '../controller/runnable-group.js';
import { EventRecorder } from '../events/event-recorder.js';
import { HttpEndpoints } from '../http/http-endpoints.js';
import type { SecureServing } from '../http/http-endpoints.js';
import { DelegatedAuth } from '../http/delegated-auth.js';
import { kubeAuthReviews, REVIEW_TIMEOUT_MS } from '../http/kube-auth-reviews.js';
import { ServingCert } from '../http/serving-cert.js';
import { InformerFactory } from '../informer/informer-factory.js';
import { InformerScope } from '../informer/informer-scope.js';
import { LeaderElector } from '../leaderelection/leader-elector.js';
import { configureLogging, errorMessage, logger } from '../logging/logger.js';
import { eventSourceOf, runnablesOf } from './controller-descriptor.js';
import type { ControllerDescriptor } from './controller-descriptor.js';
import { parseBindAddress } from './bind-address.js';
import { FlagError, formatHelp } from './flag-parser.js';
import { MANAGER_FLAGS, parseManagerFlags, resolveControllers } from './flags.js';
import type { ManagerOptions } from './flags.js';

/**
 * The metrics endpoint's review client: a scraper costs two reviews per cache TTL (10 s), so this
 * leaves room for dozens while a flood of made-up tokens costs the API server at most this rate
 * (k8s.io/apiserver's delegating client allows 200/s: it guards a whole API, not one scrape path).
 */
const METRICS_AUTH_QPS = 20;
const METRICS_AUTH_BURST = 40;

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface ManagerIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Called with the exit code once the manager is done; the bin exits the process. */
  exit: (code: number) => void;
}

const defaultIo: ManagerIo = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  exit: (code) => process.exit(code),
};

/** --leader-elect-namespace, else the pod's namespace, else kube-system. */
function leaderElectNamespace(flag: string): string {
  if (flag) return flag;
  try {
    return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || 'kube-system';
  } catch {
    return 'kube-system';
  }
}

interface Loop {
  descriptor: ControllerDescriptor;
  runnables: RunnableGroup;
  events: EventRecorder;
  /** The informers this loop asked for: it starts once these have synced. */
  scope: InformerScope;
  elector?: LeaderElector;
}

/**
 * The controller-manager: parses flags, builds the shared client and informers, serves the HTTP
 * endpoints first, then sets each loop up on its own and starts its workers once its own caches
 * have synced and this process leads that loop's Lease. SIGTERM/SIGINT let in-flight reconciles
 * finish (queued keys are left to the next leader), release the leases and exit 0.
 */
export async function runManager(argv: string[], descriptors: ControllerDescriptor[], io: ManagerIo = defaultIo): Promise<void> {
  const extraFlags = descriptors.flatMap((d) => d.flags ?? []);
  let opts: ManagerOptions;
  let enabled: string[];
  try {
    opts = parseManagerFlags(argv, extraFlags);
    if (opts.help) {
      io.stdout(`Usage: topovol-controller-manager [flags]\n\nControllers: ${descriptors.map((d) => `${d.name} (${d.description})`).join(', ')}\n\nFlags:\n${formatHelp([...MANAGER_FLAGS, ...extraFlags])}\n`);
      return io.exit(0);
    }
    enabled = resolveControllers(
      opts.controllers,
      descriptors.map((d) => d.name),
      descriptors.filter((d) => d.disabledByDefault).map((d) => d.name),
    );
  } catch (err) {
    if (err instanceof FlagError) {
      io.stderr(`Error: ${err.message}\n`);
      return io.exit(2);
    }
    throw err;
  }
  configureLogging(opts.logLevel, opts.logFormat);
  const log = logger().child({ component: 'manager' });
  if (enabled.length === 0) {
    io.stderr('Error: no controllers enabled (see --controllers)\n');
    return io.exit(2);
  }

  let client: KubeClient;
  try {
    client = KubeClient.load(opts.kubeconfig, { qps: opts.kubeApiQps, burst: opts.kubeApiBurst, userAgent: 'topovol-controller-manager' });
  } catch (err) {
    io.stderr(`Error: cannot load a kubeconfig (--kubeconfig, KUBECONFIG or in-cluster): ${errorMessage(err)}\n`);
    return io.exit(1);
  }
  // The Leases get a client of their own, as kube-controller-manager's "leader-election" client:
  // a renewal never waits in the rate limiter behind the loops' own requests.
  const electionClient = opts.leaderElect
    ? KubeClient.load(opts.kubeconfig, { qps: opts.kubeApiQps, burst: opts.kubeApiBurst, userAgent: 'topovol-controller-manager/leader-election' })
    : undefined;
  const informers = new InformerFactory(client);
  const http = new HttpEndpoints();
  const identity = `${os.hostname()}_${randomUUID()}`;
  const namespace = leaderElectNamespace(opts.leaderElectNamespace);
  const loops: Loop[] = [];
  let exiting = false;

  const shutdown = async (code: number, why: string): Promise<void> => {
    if (exiting) return;
    exiting = true;
    log.info('shutting down', { reason: why, timeoutMs: opts.shutdownTimeoutMs });
    // A hard bound in case something hangs despite the per-step timeouts.
    const hard = setTimeout(() => {
      log.error('shutdown did not finish in time; exiting');
      io.exit(code || 1);
    }, opts.shutdownTimeoutMs + 5000);
    hard.unref();
    const deadline = Date.now() + opts.shutdownTimeoutMs;
    await Promise.all(loops.map((l) => l.runnables.stop(Math.max(0, deadline - Date.now()))));
    await Promise.race([Promise.all(loops.map((l) => l.events.flush())), sleep(Math.max(0, Math.min(2000, deadline - Date.now())))]);
    await Promise.all(loops.map(async (l) => l.elector?.stop()));
    await informers.stop();
    await http.close();
    authClient?.close();
    client.close();
    electionClient?.close();
    clearTimeout(hard);
    log.info('stopped');
    io.exit(code);
  };

  // Probes first (controller-runtime's order): a setup that waits for its CSI driver must not
  // outlast the liveness probe. Each loop reports its own readiness.
  http.addHealthzCheck('ping', () => undefined);
  // The metrics endpoint's reviews get a client of their own too: a flood of tokens sent to the
  // port waits in its limiter, never in the loops'.
  let authClient: KubeClient | undefined;
  try {
    const metricsAddr = parseBindAddress(opts.metricsBindAddress);
    let secure: SecureServing | undefined;
    if (metricsAddr && opts.metricsSecure) {
      authClient = KubeClient.load(opts.kubeconfig, { qps: METRICS_AUTH_QPS, burst: METRICS_AUTH_BURST, userAgent: 'topovol-controller-manager/metrics-auth' });
      secure = { cert: new ServingCert(opts.metricsCertPath || undefined), auth: new DelegatedAuth(kubeAuthReviews(authClient), { maxInFlight: METRICS_AUTH_QPS * (REVIEW_TIMEOUT_MS / 1000) }) };
    }
    if (metricsAddr && !opts.metricsSecure && opts.metricsCertPath) log.warn('--metrics-cert-path is ignored with --metrics-secure=false: /metrics is plain HTTP');
    if (metricsAddr) log.info('serving metrics', { port: await http.serveMetrics(metricsAddr, secure), secure: opts.metricsSecure });
    const probeAddr = parseBindAddress(opts.healthProbeBindAddress);
    if (probeAddr) log.info('serving health probes', { port: await http.serveProbes(probeAddr) });
  } catch (err) {
    io.stderr(`Error: cannot serve HTTP endpoints: ${errorMessage(err)}\n`);
    return io.exit(1);
  }

  process.once('SIGTERM', () => void shutdown(0, 'SIGTERM'));
  process.once('SIGINT', () => void shutdown(0, 'SIGINT'));
  informers.start();

  /** Once the loop's caches have synced, starts its runnables that may run now (RunnableGroup.start). */
  const startRunnables = (l: Loop, leading: boolean): void => {
    void l.scope
      .waitForSync()
      .then(() => {
        if (!exiting) l.runnables.start(leading);
      })
      .catch((err: unknown) => log.error('controller stopped with an error', { controller: l.descriptor.name, error: errorMessage(err) }));
  };

  const elect = (l: Loop): void => {
    if (!opts.leaderElect) return startRunnables(l, true);
    // controller-runtime's order: what runs on every replica starts without waiting for the Lease.
    startRunnables(l, false);
    const name = `topovol-${l.descriptor.name}`;
    l.elector = new LeaderElector(
      electionClient ?? client,
      { namespace, name, identity, leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs },
      {
        onStartedLeading: () => {
          log.info('became leader', { lease: `${namespace}/${name}` });
          startRunnables(l, true);
        },
        onStoppedLeading: (reason) => {
          if (reason !== 'lost') return;
          // As kube-controller-manager: a loop that lost its lease must not keep writing. Also in
          // the middle of a graceful shutdown, whose reconciles would otherwise write alongside
          // the new leader until the shutdown timeout (controller-runtime skips the graceful
          // shutdown once the lock is lost: pkg/manager/internal.go, OnStoppedLeading).
          log.error(exiting ? 'leader election lost while shutting down; exiting now' : 'leader election lost; exiting', { lease: `${namespace}/${name}` });
          exiting = true;
          io.exit(1);
        },
      },
    );
    const elector = l.elector;
    const check = (): string | undefined => (elector.healthy() ? undefined : 'lease renewal overdue');
    http.addHealthzCheck(`leader-election-${l.descriptor.name}`, check);
    http.addReadyzCheck(`leader-election-${l.descriptor.name}`, check);
    // Campaign once this loop's caches have synced (controller-runtime's manager starts its leader
    // election after its caches): a replica that cannot sync them (a broken watch, a list it may not
    // make) never holds the Lease that a replica able to work would take, keeping the loop stopped
    // on every replica. A standby syncs while it waits, so its takeover is not delayed; a lone
    // replica restarted after a crash waits for its sync, then for its old Lease to expire. The
    // elector exists before: leader_election_master_status is 0 meanwhile, so an alert on no leader
    // sees a loop no replica can sync.
    void l.scope
      .waitForSync()
      .then(() => {
        if (!exiting) void elector.run();
      })
      .catch((err: unknown) => log.error('leader election not started', { controller: l.descriptor.name, error: errorMessage(err) }));
  };

  /** Sets one loop up (its own pace: one waiting for a CSI socket holds up no other) and starts it. */
  const launch = async (descriptor: ControllerDescriptor): Promise<void> => {
    const name = descriptor.name;
    const started = Date.now();
    const own = new InformerScope(informers);
    let setUp = false;
    let progress = '';
    http.addReadyzCheck(`loop-${name}`, () => {
      if (!setUp) return progress ? `setting up: ${progress}` : 'setting up';
      const waiting = own.unsynced();
      if (waiting.length === 0) return undefined;
      const late = Date.now() - started > opts.cacheSyncTimeoutMs;
      return late ? `caches not synced after ${Math.round(opts.cacheSyncTimeoutMs / 1000)}s: ${waiting.join(', ')}` : `waiting for caches: ${waiting.join(', ')}`;
    });
    const source = eventSourceOf(descriptor, os.hostname());
    const events = new EventRecorder(client, source.component, source.host, opts.dryRun);
    // The loop's writes ask its elector first (LeaderElector.writeFence); Events do not, since they
    // change no object's state and a standby's (or a stepping-down leader's) may still explain one.
    // (The loop, and later its elector, exist only after the setup that takes the client.)
    const made: { loop?: Loop } = {};
    const loopClient = opts.leaderElect ? client.withWriteFence(() => made.loop?.elector?.writeFence()) : client;
    // A runnable whose work ended with an error leaves its loop dead, and (on the leader) its Lease
    // held, so no replica would do that work: the process stops, releasing its Leases, and exits
    // 1 for its pod to be restarted (controller-runtime's manager returns the first runnable error).
    const runnables = new RunnableGroup(runnablesOf(await descriptor.setup({ client: loopClient, informers: own, events, options: opts, log: logger().child({ controller: name }), setupProgress: (d) => void (progress = d) })), (r, err) => {
      log.error('controller stopped with an error; exiting', { controller: name, runnable: r.name, error: errorMessage(err) });
      void shutdown(1, `${name}: ${r.name} stopped with an error`);
    });
    setUp = true;
    const l: Loop = { descriptor, runnables, events, scope: own };
    made.loop = l;
    loops.push(l);
    const timer = setTimeout(() => {
      const waiting = own.unsynced();
      if (waiting.length > 0) log.error('caches not synced in time; the loop waits on and is not ready', { controller: name, resources: waiting, timeoutMs: opts.cacheSyncTimeoutMs });
    }, Math.max(0, opts.cacheSyncTimeoutMs - (Date.now() - started)));
    timer.unref();
    if (exiting) return;
    elect(l);
  };

  log.info('controller-manager starting', { controllers: enabled, identity, leaderElect: opts.leaderElect, dryRun: opts.dryRun });
  const setups = enabled.map((name) =>
    launch(descriptors.find((d) => d.name === name)!).catch((err: unknown) => {
      io.stderr(`Error: controller ${name} setup failed: ${errorMessage(err)}\n`);
      void shutdown(1, `${name} setup failed`);
    }),
  );
  await Promise.all(setups);
  if (!exiting) log.info('controller-manager started', { controllers: enabled });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
