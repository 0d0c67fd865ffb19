import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Resources } from '@topovol/shared';
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
import { benchClaim, benchNamespace, benchVolume } from './static-pairs.js';

/** Crash and restart while binding: how soon each new process binds again. */
export interface RestartRun {
  contender: ContenderName;
  version: string;
  n: number;
  killEverySeconds: number;
  complete: boolean;
  bound: number;
  /** Processes started after a SIGKILL (the first start is not counted). */
  restarts: number;
  /** Per restart: the new process's start to the first claim seen Bound after it (restarts that bound nothing before the next kill are left out). */
  restartToBoundMs: LatencySummary;
  /** Restarts killed again before they bound anything. */
  restartsWithoutBinding: number;
  /** First claim create to the last claim Bound. */
  allBoundSeconds: number;
  cpuSeconds: number;
  logDir: string;
  /** [seconds since the first claim create, claims Bound], for the plot. */
  boundTimeline?: [number, number][];
  /** Each restart (the new process's start, right after the SIGKILL), seconds since the first claim create. */
  restartsAtSeconds?: number[];
}

/**
 * N volumes made Available by a first binder process, then N claims created at once while the
 * binder is SIGKILLed every `killEveryMs` and started again at once (a crash loop, or a node
 * failure with a replacement already scheduled), until every claim is Bound. No leader election:
 * the time measured is the process's own, from start to its first binding.
 */
export async function runRestart(name: ContenderName, n: number, killEveryMs: number, opts: BenchOptions): Promise<RestartRun> {
  const { cp, admin, logDir } = await freshControlPlane(name);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  let binder: StartedBinder | undefined;
  let cpu = 0;
  let generation = 0;
  const starts: number[] = [];
  const start = async (): Promise<StartedBinder> => {
    const dir = path.join(logDir, `process-${generation++}`);
    mkdirSync(dir, { recursive: true });
    starts.push(performance.now());
    return startContender(name, cp, opts, dir);
  };
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await volumes.start();
    await claims.start();
    binder = await start();
    await createAll(admin, Resources.persistentVolumes, n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    if (!(await volumes.waitForCount(n, opts.timeoutMs, opts.stallMs))) throw new Error(`${name}: volumes not Available; log in ${logDir}`);
    // The restarts measured start from here: the first process is past its start-up.
    starts.length = 0;
    say(`${name}: ${n} volumes Available; creating ${n} claims, SIGKILL every ${killEveryMs / 1000} s`);
    const claimStart = performance.now();
    let killing = true;
    const killer = (async (): Promise<void> => {
      while (killing) {
        await new Promise((r) => setTimeout(r, killEveryMs));
        if (!killing || !binder) break;
        const pid = binder.process.pid;
        cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
        await binder.process.kill();
        binder = await start();
        say(`${name}: restart ${starts.length}; ${claims.reachedAt.size}/${n} Bound`);
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
    const pid = binder.process.pid;
    cpu += pid !== undefined ? (cpuSeconds(pid) ?? 0) : 0;
    const boundTimes = [...claims.reachedAt.values()].sort((a, b) => a - b);
    const { waits, without } = firstAfter(starts, boundTimes);
    return {
      contender: name,
      version: binder.version,
      n,
      killEverySeconds: killEveryMs / 1000,
      complete,
      bound: boundTimes.length,
      restarts: starts.length,
      restartToBoundMs: summarize(waits),
      restartsWithoutBinding: without,
      allBoundSeconds: ((boundTimes[boundTimes.length - 1] ?? claimStart) - claimStart) / 1000,
      cpuSeconds: cpu,
      logDir,
      boundTimeline: timeline(boundTimes, claimStart, 1000),
      restartsAtSeconds: starts.map((s) => (s - claimStart) / 1000),
    };
  } finally {
    await binder?.process.stop();
    await claims.stop();
    await volumes.stop();
    admin.close();
    await cp.stop();
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

/** What hack/bench/results/restart-latest.json holds. */
export interface RestartRecord {
  benchmark: 'pv-binder-restart';
  date: string;
  machine: string;
  options: { ns: number[]; killEveryMs: number };
  runs: RestartRun[];
}

export function formatRestart(runs: readonly RestartRun[]): string {
  const rows = runs.map(
    (r) =>
      `${r.contender.padEnd(9)} N ${r.n}, SIGKILL every ${r.killEverySeconds} s: ${r.bound} Bound${r.complete ? '' : ' (incomplete)'} in ${f(r.allBoundSeconds, 1)} s over ${r.restarts} restarts; restart to first Bound p50 ${f(r.restartToBoundMs.p50, 0)} ms, max ${f(r.restartToBoundMs.max, 0)} ms (${r.restartToBoundMs.count} restarts; ${r.restartsWithoutBinding} killed before binding); CPU ${f(r.cpuSeconds, 1)} s`,
  );
  const t = runs.find((r) => r.contender === 'topovol');
  const u = runs.find((r) => r.contender === 'upstream');
  if (t && u) rows.push(`Topovol/upstream: restart to first Bound p50 ${(t.restartToBoundMs.p50 / u.restartToBoundMs.p50).toFixed(2)}x, all Bound ${(t.allBoundSeconds / u.allBoundSeconds).toFixed(2)}x (<1 is better)`);
  return ['crash and restart while binding (binder SIGKILLed and started again at once; no leader election)', ...rows].join('\n');
}
