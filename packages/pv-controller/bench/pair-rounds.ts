import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import type { ControlPlane } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { say } from './bench-cluster.js';
import { timeline } from './binding-run.js';
import { startContender } from './contenders.js';
import type { StartedBinder } from './contenders.js';
import { createAll } from './create-all.js';
import type { PhaseWatch } from './phase-watch.js';
import { benchClaim, benchVolume } from './static-pairs.js';

/** At most this many rounds, whatever --min-samples asks: a binder that is never killed in time must still end. */
export const MAX_ROUNDS = 20;

/** One round's claim phase: its start and its claims' Bound times (monotonic ms). */
export interface PairRound {
  claimStart: number;
  /** Sorted. */
  boundTimes: number[];
  complete: boolean;
}

export interface RoundSetup {
  name: string;
  admin: KubeClient;
  n: number;
  opts: BenchOptions;
  volumes: PhaseWatch;
  claims: PhaseWatch;
  logDir: string;
}

/**
 * One round on its own control plane: N volumes made Available (no kill meanwhile), then N claims
 * created at once while `duringClaims` kills processes, until every claim is Bound; the function
 * it returns stops the killing.
 */
export async function pairRound(s: RoundSetup, duringClaims: () => () => Promise<void>): Promise<PairRound> {
  const { admin, n, opts } = s;
  await createAll(admin, Resources.persistentVolumes, n, opts.concurrency, (i) => benchVolume(i), () => undefined);
  if (!(await s.volumes.waitForCount(n, opts.timeoutMs, opts.stallMs))) throw new Error(`${s.name}: volumes not Available; log in ${s.logDir}`);
  say(`${s.name}: ${n} volumes Available; creating ${n} claims, ${opts.scenario === 'failover' ? opts.stopSignal : 'SIGKILL'} every ${opts.killEveryMs / 1000} s`);
  const claimStart = performance.now();
  const stop = duringClaims();
  let complete: boolean;
  try {
    await createAll(admin, Resources.persistentVolumeClaims, n, opts.concurrency, (i) => benchClaim(i, opts.namespaces), () => undefined);
    complete = await s.claims.waitForCount(n, opts.timeoutMs, opts.stallMs);
  } finally {
    await stop();
  }
  return { claimStart, boundTimes: [...s.claims.reachedAt.values()].sort((a, b) => a - b), complete };
}

/**
 * A binder that binds N pairs between two kills yields one sample or two per round, so rounds,
 * each on a fresh control plane (the same start-up for every restart), repeat until `samples` add
 * up to `minSamples`: at most MAX_ROUNDS, and never after an incomplete one.
 */
export async function repeatRounds<T extends { complete: boolean }>(minSamples: number, once: (index: number) => Promise<T>, samples: (round: T) => number): Promise<T[]> {
  const rounds: T[] = [];
  let measured = 0;
  while (rounds.length < MAX_ROUNDS && measured < minSamples) {
    const round = await once(rounds.length);
    rounds.push(round);
    measured += samples(round);
    if (!round.complete) break;
  }
  return rounds;
}

/** What every round reports besides its claims. */
export interface RoundCommon {
  version: string;
  cpuSeconds: number;
  logDir: string;
}

/** The figures the restart and failover runs report alike, from their rounds (the plot's timeline is the first round's). */
export function roundTotals(contender: ContenderName, n: number, killEveryMs: number, rounds: readonly (PairRound & RoundCommon)[]) {
  const first = rounds[0]!;
  return {
    contender,
    version: first.version,
    n,
    rounds: rounds.length,
    killEverySeconds: killEveryMs / 1000,
    complete: rounds.every((r) => r.complete),
    bound: rounds.reduce((sum, r) => sum + r.boundTimes.length, 0),
    allBoundSeconds: medianRoundSeconds(rounds),
    cpuSeconds: rounds.reduce((sum, r) => sum + r.cpuSeconds, 0),
    logDir: first.logDir,
    boundTimeline: timeline(first.boundTimes, first.claimStart, 1000),
  };
}

/** Starts binder processes of one contender, each logging into its own process-<k> directory under logDir. */
export function binderStarter(name: ContenderName, cp: ControlPlane, opts: BenchOptions, logDir: string): () => Promise<StartedBinder> {
  let generation = 0;
  return async () => {
    const dir = path.join(logDir, `process-${generation++}`);
    mkdirSync(dir, { recursive: true });
    return startContender(name, cp, opts, dir);
  };
}

/**
 * Calls `kill` every `everyMs` until it answers false or the returned stop is called; `kill` sees
 * whether stop was called meanwhile. Stop waits for the last call and rethrows its failure, which is
 * held until then (an unhandled rejection would skip every teardown).
 */
export function killEvery(everyMs: number, kill: (killing: () => boolean) => Promise<boolean>): () => Promise<void> {
  let killing = true;
  let failed: Error | undefined;
  const loop = (async (): Promise<void> => {
    while (killing) {
      await new Promise((r) => setTimeout(r, everyMs));
      if (!killing || !(await kill(() => killing))) break;
    }
  })().catch((err: unknown) => {
    failed = err instanceof Error ? err : new Error(String(err));
  });
  return async () => {
    killing = false;
    await loop;
    if (failed !== undefined) throw failed;
  };
}

/** The median round's first claim create to its last claim Bound, in seconds (the lower median for an even count). */
export function medianRoundSeconds(rounds: readonly PairRound[]): number {
  const secs = rounds.map((r) => ((r.boundTimes[r.boundTimes.length - 1] ?? r.claimStart) - r.claimStart) / 1000).sort((a, b) => a - b);
  return secs.length === 0 ? 0 : secs[Math.floor((secs.length - 1) / 2)]!;
}
