import { performance } from 'node:perf_hooks';
import { Informer, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { cpuSeconds, summarize } from '@topovol/testing';
import type { LatencySummary } from '@topovol/testing';
import type { BenchOptions, ContenderName, StopSignal } from './bench-flags.js';
import { ensureNamespace, freshControlPlane, say } from './bench-cluster.js';
import type { StartedBinder } from './contenders.js';
import { f } from './bench-report.js';
import { binderStarter, killEvery, pairRound, repeatRounds, roundTotals } from './pair-rounds.js';
import type { PairRound, RoundCommon } from './pair-rounds.js';
import { PhaseWatch } from './phase-watch.js';
import { benchNamespace } from './static-pairs.js';

/** Both contenders' leader election timing: short, so that a run sees many handovers. */
export const FAILOVER_LEASE = { leaseMs: 4000, renewMs: 3000, retryMs: 1000 };

/** The Lease each contender's binder leads (both in kube-system, their default namespace). */
const LEASE_NAME: Record<ContenderName, string> = { topovol: 'topovol-pv-binder', upstream: 'kube-controller-manager' };

/** A leader killed while binding and a standby taking over: how soon the new leader binds. */
export interface FailoverRun {
  contender: ContenderName;
  version: string;
  /** Pairs per round. */
  n: number;
  /** Rounds of N pairs, each on a fresh control plane, repeated until --min-samples handovers were measured. */
  rounds: number;
  killEverySeconds: number;
  /** How the leader was stopped (absent in records before SIGTERM could be chosen: SIGKILL). */
  stopSignal?: StopSignal;
  complete: boolean;
  /** Claims Bound over all rounds. */
  bound: number;
  /** Leases taken over by a standby after the leader was killed. */
  handovers: number;
  /** Per handover: the bench's watch seeing the new holder to the first claim seen Bound after it. */
  acquiredToBoundMs: LatencySummary;
  /** Per handover: the SIGKILL (or SIGTERM) of the leader to the new leader's first binding (lease expiry, or the old leader's shutdown, included). */
  killedToBoundMs: LatencySummary;
  /** The median round's first claim create to its last claim Bound. */
  allBoundSeconds: number;
  cpuSeconds: number;
  logDir: string;
  /** The first round's [seconds since its first claim create, claims Bound], for the plot. */
  boundTimeline?: [number, number][];
  /** The first round's SIGKILLs of the leader, and leases taken over, seconds since its first claim create. */
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

/** One round on a fresh control plane. */
interface FailoverRound extends PairRound, RoundCommon {
  kills: number[];
  /** The lease holder change after each kill, in order (one fewer when the last came after the round). */
  acquired: number[];
  fromAcquired: number[];
  killedToBound: number[];
}

/**
 * Two binder processes with leader election (the same short lease timing for both contenders), in
 * rounds (pair-rounds.ts), each on a fresh control plane: N volumes made Available, then N claims
 * created at once while the current leader is SIGKILLed (or, --stop-signal SIGTERM, stopped) every `killEveryMs`; once the standby has
 * taken the lease a new standby is started (a replica set replacing its pod), until every claim is Bound.
 */
export async function runFailover(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions): Promise<FailoverRun> {
  const rounds = await repeatRounds(opts.minSamples, (i) => failoverRound(name, n, killEveryMs, opts, i), (r) => r.fromAcquired.length);
  const first = rounds[0]!;
  return {
    ...roundTotals(name, n, killEveryMs, rounds),
    stopSignal: opts.stopSignal,
    handovers: rounds.reduce((sum, r) => sum + r.acquired.length, 0),
    acquiredToBoundMs: summarize(rounds.flatMap((r) => r.fromAcquired)),
    killedToBoundMs: summarize(rounds.flatMap((r) => r.killedToBound)),
    killsAtSeconds: first.kills.map((k) => (k - first.claimStart) / 1000),
    acquiredAtSeconds: first.acquired.map((a) => (a - first.claimStart) / 1000),
  };
}

async function failoverRound(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions, index: number): Promise<FailoverRound> {
  const { cp, admin, logDir } = await freshControlPlane(name);
  say(`${name}: round ${index + 1}`);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  const lease = watchHolders(admin, LEASE_NAME[name]);
  const { leaseMs, renewMs, retryMs } = FAILOVER_LEASE;
  const electing = [`--leader-elect=true`, `--leader-elect-lease-duration=${leaseMs}ms`, `--leader-elect-renew-deadline=${renewMs}ms`, `--leader-elect-retry-period=${retryMs}ms`];
  const withElection: BenchOptions = { ...opts, topovolFlags: [...opts.topovolFlags, ...electing], upstreamFlags: [...opts.upstreamFlags, ...electing] };
  const start = binderStarter(name, cp, withElection, logDir);
  let leader: StartedBinder | undefined;
  let standby: StartedBinder | undefined;
  let cpu = 0;
  const kills: number[] = [];
  const acquired: number[] = [];
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await volumes.start();
    await claims.start();
    lease.informer.start();
    await lease.informer.waitForSync();
    leader = await start();
    while (lease.changes.length === 0) await new Promise((r) => setTimeout(r, 50));
    standby = await start();
    const round = await pairRound({ name, admin, n, opts, volumes, claims, logDir }, () =>
      killEvery(killEveryMs, async (killing) => {
        if (!leader || !standby) return false;
        const before = lease.changes.length;
        const pid = leader.process.pid;
        // Read before the stop: an exited process has no /proc entry (with SIGTERM, its shutdown's CPU is not counted).
        cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
        kills.push(performance.now());
        // SIGTERM: a rolling update. The old process is waited for (up to its own --shutdown-timeout,
        // 30 s by default, plus a margin) as a replica set waits for the pod it replaces.
        if (opts.stopSignal === 'SIGTERM') await leader.process.stop(40_000);
        else await leader.process.kill();
        // The standby takes over once the lease expires. Its replacement starts only then: two
        // standbys would race for the lease, and the next kill must hit the process that leads.
        leader = standby;
        standby = undefined;
        while (killing() && lease.changes.length === before) await new Promise((r) => setTimeout(r, 50));
        if (lease.changes.length > before) acquired.push(lease.changes[before]!);
        if (!killing()) return false;
        standby = await start();
        say(`${name}: handover ${kills.length}; ${claims.reachedAt.size}/${n} Bound`);
        return true;
      }),
    );
    for (const p of [leader, standby]) {
      const pid = p?.process.pid;
      cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
    }
    // Bindings seen right after a kill are the old leader's writes landing, so each handover is
    // measured through the new leader's first binding.
    const killedToBound = acquired.flatMap((at, i) => {
      const first = round.boundTimes.find((t) => t >= at);
      return first !== undefined && first < (acquired[i + 1] ?? Infinity) ? [first - kills[i]!] : [];
    });
    return { ...round, version: leader.version, kills, acquired, fromAcquired: firstAfter(acquired, round.boundTimes).waits, killedToBound, cpuSeconds: cpu, logDir };
  } finally {
    try {
      await Promise.all([leader?.process.stop(), standby?.process.stop()]);
      await Promise.allSettled([lease.informer.stop(), claims.stop(), volumes.stop()]);
    } finally {
      admin.close();
      await cp.stop();
    }
  }
}

/**
 * Per instant (a process start, a lease taken over), the wait to the first Bound seen after it and
 * before the next instant; `without` counts instants followed by no binding before the next one.
 */
export function firstAfter(instants: readonly number[], sortedBoundTimes: readonly number[]): { waits: number[]; without: number } {
  const waits: number[] = [];
  let without = 0;
  instants.forEach((s, i) => {
    const next = instants[i + 1] ?? Infinity;
    const first = sortedBoundTimes.find((t) => t >= s);
    if (first !== undefined && first < next) waits.push(first - s);
    else if (first !== undefined || i < instants.length - 1) without++;
  });
  return { waits, without };
}

/** What hack/bench/results/failover-latest.json holds. */
export interface FailoverRecord {
  benchmark: 'pv-binder-failover';
  date: string;
  machine: string;
  options: { ns: number[]; killEveryMs: number; minSamples?: number; stopSignal?: StopSignal; lease: typeof FAILOVER_LEASE };
  runs: FailoverRun[];
}

/** "SIGKILLed" or "sent SIGTERM", for the report. */
function stoppedWith(r: { stopSignal?: StopSignal }): string {
  return r.stopSignal === 'SIGTERM' ? 'sent SIGTERM' : 'SIGKILLed';
}

/** The record's file prefix: failover-latest.json for crashes, failover-sigterm-latest.json for rolling updates. */
export function failoverRecordPrefix(stopSignal: StopSignal): string {
  return stopSignal === 'SIGTERM' ? 'failover-sigterm' : 'failover';
}

export function formatFailover(runs: readonly FailoverRun[]): string {
  const rows = runs.map(
    (r) =>
      `${r.contender.padEnd(9)} ${r.rounds} rounds of N ${r.n}, leader ${stoppedWith(r)} every ${r.killEverySeconds} s: ${r.bound} Bound${r.complete ? '' : ' (incomplete)'}, ${f(r.allBoundSeconds, 1)} s per round (median), ${r.handovers} handovers; lease taken → first Bound p50 ${f(r.acquiredToBoundMs.p50, 0)} ms, max ${f(r.acquiredToBoundMs.max, 0)} ms; kill → first Bound p50 ${f(r.killedToBoundMs.p50, 0)} ms`,
  );
  const t = runs.find((r) => r.contender === 'topovol');
  const u = runs.find((r) => r.contender === 'upstream');
  if (t && u) {
    rows.push(`Topovol/upstream: lease taken → first Bound p50 ${(t.acquiredToBoundMs.p50 / u.acquiredToBoundMs.p50).toFixed(2)}x, stop → new leader's first Bound p50 ${(t.killedToBoundMs.p50 / u.killedToBoundMs.p50).toFixed(2)}x (<1 is better)`);
  }
  const { leaseMs, renewMs, retryMs } = FAILOVER_LEASE;
  return [`leader failover while binding (lease ${leaseMs / 1000} s, renew deadline ${renewMs / 1000} s, retry ${retryMs / 1000} s for both; a new standby started once the old one took over)`, ...rows].join('\n');
}
