import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Informer, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { cpuSeconds, summarize } from '@topovol/testing';
import type { LatencySummary } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { ensureNamespace, freshControlPlane, say } from './bench-cluster.js';
import { startContender } from './contenders.js';
import type { StartedBinder } from './contenders.js';
import { f } from './bench-report.js';
import { timeline } from './binding-run.js';
import { createAll } from './create-all.js';
import { PhaseWatch } from './phase-watch.js';
import { firstAfter } from './run-restart.js';
import { benchClaim, benchNamespace, benchVolume } from './static-pairs.js';

/** Both contenders' leader election timing: short, so that a run sees many handovers. */
export const FAILOVER_LEASE = { leaseMs: 4000, renewMs: 3000, retryMs: 1000 };

/** The Lease each contender's binder leads (both in kube-system, their default namespace). */
const LEASE_NAME: Record<ContenderName, string> = { topovol: 'topovol-pv-binder', upstream: 'kube-controller-manager' };

/** A leader killed while binding and a standby taking over: how soon the new leader binds. */
export interface FailoverRun {
  contender: ContenderName;
  version: string;
  n: number;
  killEverySeconds: number;
  complete: boolean;
  bound: number;
  /** Leases taken over by a standby after the leader was killed. */
  handovers: number;
  /** Per handover: the bench's watch seeing the new holder to the first claim seen Bound after it. */
  acquiredToBoundMs: LatencySummary;
  /** Per handover: the SIGKILL of the leader to the new leader's first binding (lease expiry included). */
  killedToBoundMs: LatencySummary;
  allBoundSeconds: number;
  cpuSeconds: number;
  logDir: string;
  /** [seconds since the first claim create, claims Bound], for the plot. */
  boundTimeline?: [number, number][];
  /** Each SIGKILL of the leader, and each lease taken over, seconds since the first claim create. */
  killsAtSeconds?: number[];
  acquiredAtSeconds?: number[];
}

interface Holder extends KubeObject {
  spec?: { holderIdentity?: string };
}

/** Records, on the monotonic clock, each time the binder's Lease gets a new holder. */
function watchHolders(admin: KubeClient, name: string): { informer: Informer<Holder>; changes: number[] } {
  const changes: number[] = [];
  let holder: string | undefined;
  const informer = new Informer<Holder>(admin, Resources.leases, { namespace: 'kube-system' });
  const seen = (l: Holder): void => {
    const h = l.spec?.holderIdentity;
    if (l.metadata?.name !== name || !h || h === holder) return;
    holder = h;
    changes.push(performance.now());
  };
  informer.addEventHandler({ onAdd: seen, onUpdate: (_old, l) => seen(l) });
  return { informer, changes };
}

/**
 * Two binder processes with leader election (the same short lease timing for both contenders):
 * N volumes made Available by the first leader, then N claims created at once while the current
 * leader is SIGKILLed every `killEveryMs`; once the standby has taken the lease a new standby is
 * started (a replica set replacing its pod), until every claim is Bound.
 */
export async function runFailover(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions): Promise<FailoverRun> {
  const { cp, admin, logDir } = await freshControlPlane(name);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  const lease = watchHolders(admin, LEASE_NAME[name]);
  const { leaseMs, renewMs, retryMs } = FAILOVER_LEASE;
  const electing = [`--leader-elect=true`, `--leader-elect-lease-duration=${leaseMs}ms`, `--leader-elect-renew-deadline=${renewMs}ms`, `--leader-elect-retry-period=${retryMs}ms`];
  const withElection: BenchOptions = { ...opts, topovolFlags: [...opts.topovolFlags, ...electing], upstreamFlags: [...opts.upstreamFlags, ...electing] };
  let generation = 0;
  const start = (): Promise<StartedBinder> => {
    const dir = path.join(logDir, `process-${generation++}`);
    mkdirSync(dir, { recursive: true });
    return startContender(name, cp, withElection, dir);
  };
  let leader: StartedBinder | undefined;
  let standby: StartedBinder | undefined;
  let cpu = 0;
  const kills: number[] = [];
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await volumes.start();
    await claims.start();
    lease.informer.start();
    await lease.informer.waitForSync();
    leader = await start();
    while (lease.changes.length === 0) await new Promise((r) => setTimeout(r, 50));
    standby = await start();
    await createAll(admin, Resources.persistentVolumes, n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    if (!(await volumes.waitForCount(n, opts.timeoutMs, opts.stallMs))) throw new Error(`${name}: volumes not Available; log in ${logDir}`);
    say(`${name}: ${n} volumes Available; creating ${n} claims, leader SIGKILLed every ${killEveryMs / 1000} s`);
    const claimStart = performance.now();
    let killing = true;
    const killer = (async (): Promise<void> => {
      while (killing) {
        await new Promise((r) => setTimeout(r, killEveryMs));
        if (!killing || !leader || !standby) break;
        const before = lease.changes.length;
        const pid = leader.process.pid;
        cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
        kills.push(performance.now());
        await leader.process.kill();
        // The standby takes over once the lease expires. Its replacement starts only then: two
        // standbys would race for the lease, and the next kill must hit the process that leads.
        leader = standby;
        standby = undefined;
        while (killing && lease.changes.length === before) await new Promise((r) => setTimeout(r, 50));
        if (!killing) break;
        standby = await start();
        say(`${name}: handover ${kills.length}; ${claims.reachedAt.size}/${n} Bound`);
      }
    })();
    let complete: boolean;
    try {
      await createAll(admin, Resources.persistentVolumeClaims, n, opts.concurrency, (i) => benchClaim(i, opts.namespaces), () => undefined);
      complete = await claims.waitForCount(n, opts.timeoutMs, opts.stallMs);
    } finally {
      killing = false;
    }
    await killer;
    for (const p of [leader, standby]) {
      const pid = p?.process.pid;
      cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
    }
    const boundTimes = [...claims.reachedAt.values()].sort((a, b) => a - b);
    // The first holder is the first leader; each later one took over after a kill. Bindings seen
    // right after a kill are the old leader's writes landing, so the gap is measured through the
    // new leader's first binding.
    const acquired = lease.changes.slice(1, kills.length + 1);
    const fromAcquired = firstAfter(acquired, boundTimes).waits;
    const killedToBound = acquired.flatMap((at, i) => {
      const first = boundTimes.find((t) => t >= at);
      return first !== undefined && first < (acquired[i + 1] ?? Infinity) ? [first - kills[i]!] : [];
    });
    return {
      contender: name,
      version: leader.version,
      n,
      killEverySeconds: killEveryMs / 1000,
      complete,
      bound: boundTimes.length,
      handovers: acquired.length,
      acquiredToBoundMs: summarize(fromAcquired),
      killedToBoundMs: summarize(killedToBound),
      allBoundSeconds: ((boundTimes[boundTimes.length - 1] ?? claimStart) - claimStart) / 1000,
      cpuSeconds: cpu,
      logDir,
      boundTimeline: timeline(boundTimes, claimStart, 1000),
      killsAtSeconds: kills.map((k) => (k - claimStart) / 1000),
      acquiredAtSeconds: acquired.map((a) => (a - claimStart) / 1000),
    };
  } finally {
    await Promise.all([leader?.process.stop(), standby?.process.stop()]);
    await lease.informer.stop();
    await claims.stop();
    await volumes.stop();
    admin.close();
    await cp.stop();
  }
}

/** What hack/bench/results/failover-latest.json holds. */
export interface FailoverRecord {
  benchmark: 'pv-binder-failover';
  date: string;
  machine: string;
  options: { ns: number[]; killEveryMs: number; lease: typeof FAILOVER_LEASE };
  runs: FailoverRun[];
}

export function formatFailover(runs: readonly FailoverRun[]): string {
  const rows = runs.map(
    (r) =>
      `${r.contender.padEnd(9)} N ${r.n}, leader SIGKILLed every ${r.killEverySeconds} s: ${r.bound} Bound${r.complete ? '' : ' (incomplete)'} in ${f(r.allBoundSeconds, 1)} s over ${r.handovers} handovers; lease taken → first Bound p50 ${f(r.acquiredToBoundMs.p50, 0)} ms, max ${f(r.acquiredToBoundMs.max, 0)} ms; kill → first Bound p50 ${f(r.killedToBoundMs.p50, 0)} ms`,
  );
  const t = runs.find((r) => r.contender === 'topovol');
  const u = runs.find((r) => r.contender === 'upstream');
  if (t && u) rows.push(`Topovol/upstream: lease taken → first Bound p50 ${(t.acquiredToBoundMs.p50 / u.acquiredToBoundMs.p50).toFixed(2)}x (<1 is better)`);
  const { leaseMs, renewMs, retryMs } = FAILOVER_LEASE;
  return [`leader failover while binding (lease ${leaseMs / 1000} s, renew deadline ${renewMs / 1000} s, retry ${retryMs / 1000} s for both; a new standby started once the old one took over)`, ...rows].join('\n');
}
