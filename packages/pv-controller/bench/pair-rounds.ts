import { performance } from 'node:perf_hooks';
import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import type { BenchOptions } from './bench-flags.js';
import { say } from './bench-cluster.js';
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
  say(`${s.name}: ${n} volumes Available; creating ${n} claims, SIGKILL every ${opts.killEveryMs / 1000} s`);
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

/** The median round's first claim create to its last claim Bound, in seconds (the lower median for an even count). */
export function medianRoundSeconds(rounds: readonly PairRound[]): number {
  const secs = rounds.map((r) => ((r.boundTimes[r.boundTimes.length - 1] ?? r.claimStart) - r.claimStart) / 1000).sort((a, b) => a - b);
  return secs.length === 0 ? 0 : secs[Math.floor((secs.length - 1) / 2)]!;
}
