import { performance } from 'node:perf_hooks';
import { Resources } from '@topovol/shared';
import { cpuSeconds, summarize } from '@topovol/testing';
import type { LatencySummary } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { ensureNamespace, freshControlPlane, say } from './bench-cluster.js';
import type { StartedBinder } from './contenders.js';
import { f } from './bench-report.js';
import { binderStarter, killEvery, pairRound, repeatRounds, roundTotals } from './pair-rounds.js';
import type { PairRound, RoundCommon } from './pair-rounds.js';
import { claimRefSeen, PhaseWatch } from './phase-watch.js';
import { benchNamespace } from './static-pairs.js';

/** Crash and restart while binding: how soon each new process binds again. */
export interface RestartRun {
  contender: ContenderName;
  version: string;
  /** Pairs per round. */
  n: number;
  /** Rounds of N pairs, each on a fresh control plane, repeated until --min-samples restarts were measured. */
  rounds: number;
  killEverySeconds: number;
  complete: boolean;
  /** Claims Bound over all rounds. */
  bound: number;
  /** Processes started after a SIGKILL during a claim phase (the first start is not counted). */
  restarts: number;
  /** Per restart: the new process's start to the first claim it bound itself (firstOwnBinding; restarts that bound nothing before the next kill are left out). */
  restartToBoundMs: LatencySummary;
  /** Restarts killed again before they bound anything (over all rounds). */
  restartsWithoutBinding: number;
  /** The median round's first claim create to its last claim Bound. */
  allBoundSeconds: number;
  cpuSeconds: number;
  logDir: string;
  /** The first round's [seconds since its first claim create, claims Bound], for the plot. */
  boundTimeline?: [number, number][];
  /** The first round's restarts (the new process's start, right after the SIGKILL), seconds since its first claim create. */
  restartsAtSeconds?: number[];
}

/** One round on a fresh control plane. */
interface RestartRound extends PairRound, RoundCommon {
  restarts: Restart[];
  measured: { waits: number[]; without: number };
}

/**
 * Rounds (pair-rounds.ts), each on a fresh control plane: N volumes made Available, then N claims
 * created at once while the binder is SIGKILLed every `killEveryMs` and started again at once (a
 * crash loop, or a node failure with a replacement already scheduled), until every claim is Bound.
 * No leader election: the time measured is the process's own, from start to its first binding.
 */
export async function runRestart(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions): Promise<RestartRun> {
  const rounds = await repeatRounds(opts.minSamples, (i) => restartRound(name, n, killEveryMs, opts, i), (r) => r.measured.waits.length);
  const first = rounds[0]!;
  return {
    ...roundTotals(name, n, killEveryMs, rounds),
    restarts: rounds.reduce((sum, r) => sum + r.restarts.length, 0),
    restartToBoundMs: summarize(rounds.flatMap((r) => r.measured.waits)),
    restartsWithoutBinding: rounds.reduce((sum, r) => sum + r.measured.without, 0),
    restartsAtSeconds: first.restarts.map((s) => (s.startedAt - first.claimStart) / 1000),
  };
}

async function restartRound(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions, index: number): Promise<RestartRound> {
  const { cp, admin, logDir } = await freshControlPlane(name);
  say(`${name}: round ${index + 1}`);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  const claimRefs = new PhaseWatch(admin, Resources.persistentVolumes, claimRefSeen);
  let binder: StartedBinder | undefined;
  let cpu = 0;
  const restarts: Restart[] = [];
  const start = binderStarter(name, cp, opts, logDir);
  const killAndRestart = async (): Promise<Restart> => {
    const pid = binder!.process.pid;
    cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
    const killedAt = performance.now();
    await binder!.process.kill();
    const startedAt = performance.now();
    binder = await start();
    return { killedAt, startedAt };
  };
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await volumes.start();
    await claims.start();
    await claimRefs.start();
    binder = await start();
    const round = await pairRound({ name, admin, n, opts, volumes, claims, logDir }, () =>
      killEvery(killEveryMs, async () => {
        restarts.push(await killAndRestart());
        say(`${name}: restart ${restarts.length}; ${claims.reachedAt.size}/${n} Bound`);
        return true;
      }),
    );
    const pid = binder.process.pid;
    cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
    const until = round.boundTimes[round.boundTimes.length - 1] ?? round.claimStart;
    return { ...round, version: binder.version, restarts, measured: firstOwnBinding(restarts, claims.reachedAt, claimRefs.reachedAt, until), cpuSeconds: cpu, logDir };
  } finally {
    try {
      await binder?.process.stop();
      await Promise.allSettled([claimRefs.stop(), claims.stop(), volumes.stop()]);
    } finally {
      admin.close();
      await cp.stop();
    }
  }
}

/** A SIGKILL and the start of the process that replaced it (monotonic ms; the killed one had exited by then). */
export interface Restart {
  killedAt: number;
  startedAt: number;
}

/**
 * Per restart, the wait from the new process's start to the first claim it bound itself: Bound
 * after the start and before the next one, its volume's claimRef first seen after the start (the
 * killed process had exited by then; the kill instant would also take a claimRef it wrote whose watch
 * event came late). Writes the killed process had in flight still land after it died (with 16
 * workers, often a claim's last write, its status), and those bindings are not the new process's. A claim whose volume the old
 * process had already claimed and the new one finished is left out too, which can only make the
 * wait longer. Only bindings up to `until` (the round's last) count; `without` counts restarts that
 * bound nothing before the next one (not the last).
 */
export function firstOwnBinding(restarts: readonly Restart[], boundAt: ReadonlyMap<string, number>, claimRefAt: ReadonlyMap<string, number>, until: number): { waits: number[]; without: number } {
  const waits: number[] = [];
  let without = 0;
  restarts.forEach((r, i) => {
    const next = restarts[i + 1]?.startedAt ?? Infinity;
    let first = Infinity;
    for (const [key, t] of boundAt) {
      const claimed = claimRefAt.get(key);
      if (t >= r.startedAt && t <= until && t < first && claimed !== undefined && claimed >= r.startedAt) first = t;
    }
    if (first < next) waits.push(first - r.startedAt);
    else if (i < restarts.length - 1) without++;
  });
  return { waits, without };
}

/** What hack/bench/results/restart-latest.json holds. */
export interface RestartRecord {
  benchmark: 'pv-binder-restart';
  date: string;
  machine: string;
  options: { ns: number[]; killEveryMs: number; minSamples?: number };
  runs: RestartRun[];
}

export function formatRestart(runs: readonly RestartRun[]): string {
  const rows = runs.map(
    (r) =>
      `${r.contender.padEnd(9)} ${r.rounds} rounds of N ${r.n}, SIGKILL every ${r.killEverySeconds} s: ${r.bound} Bound${r.complete ? '' : ' (incomplete)'}, ${f(r.allBoundSeconds, 1)} s per round (median), ${r.restarts} restarts; restart to first Bound p50 ${f(r.restartToBoundMs.p50, 0)} ms, max ${f(r.restartToBoundMs.max, 0)} ms (${r.restartToBoundMs.count} restarts; ${r.restartsWithoutBinding} killed before binding); CPU ${f(r.cpuSeconds, 1)} s`,
  );
  const t = runs.find((r) => r.contender === 'topovol');
  const u = runs.find((r) => r.contender === 'upstream');
  if (t && u) rows.push(`Topovol/upstream: restart to first Bound p50 ${(t.restartToBoundMs.p50 / u.restartToBoundMs.p50).toFixed(2)}x, all Bound ${(t.allBoundSeconds / u.allBoundSeconds).toFixed(2)}x (<1 is better)`);
  return ['crash and restart while binding (binder SIGKILLed and started again at once; no leader election)', ...rows].join('\n');
}
