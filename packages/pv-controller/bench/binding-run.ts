import { percentile } from '@topovol/testing';
import type { LatencySummary } from '@topovol/testing';
import type { VolumeWrites } from './apiserver-writes.js';
import type { CpuSplit } from './bench-cluster.js';
import type { CoreSplit } from './core-split.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import type { WriteCeiling } from './write-ceiling.js';

export type Order = BenchOptions['orders'][number];

/** One contender binding N pairs in one order, on its own control plane; what every report and plot reads. */
export interface BindingRun {
  contender: ContenderName;
  order: Order;
  version: string;
  argv: string[];
  notes: string[];
  n: number;
  /** With --repeat: which round of this N, order and contender (1-based); absent in single-round records. */
  round?: number;
  /** Pods stored before the binder started (objects-first with --pods), one per claim. */
  pods?: number;
  /** Every claim reached Bound before the timeout or a stall. */
  complete: boolean;
  bound: number;
  /**
   * Where the clock starts: objects-first, the binder's process start; binder-first, the first
   * claim create request (volumes are already Available then).
   */
  clockFrom: string;
  firstBoundSeconds: number;
  allBoundSeconds: number;
  pairsPerSecond: number;
  /** binder-first only: claim create response to the first watch event showing it Bound. */
  latencyMs?: LatencySummary;
  /** binder-first only: [milliseconds, fraction of claims Bound within it], 101 points. */
  latencyCdf?: [number, number][];
  binder: { peakRssMiB: number; cpuSeconds: number; cpuMsPerBinding: number; rssSeries: { seconds: number; rssMiB: number }[] };
  /** Updates and patches of volumes and claims over the window, from kube-apiserver's own counter. */
  writes: VolumeWrites & { perBinding: number };
  /** Measured on this run's control plane once the binder stopped, with the N bound pairs stored. */
  ceiling: WriteCeiling;
  /** pairs/s over the bindings/s the ceiling allows at four writes per binding. */
  fractionOfCeiling: number;
  /** [seconds since the clock started, claims Bound], at most ~200 points. */
  boundTimeline: [number, number][];
  /** Share of all cores busy over the window, and the part of it the binder, kube-apiserver, etcd and the bench used. */
  machineBusyFraction: number;
  ownBusyFraction: number;
  /** CPU seconds over the window of the binder, kube-apiserver, etcd and the bench (absent in records before 2026-11-26). */
  cpuSeconds?: CpuSplit;
  /** --split-cores: the CPUs each side ran on (absent without it, and in records before 2026-11-27 noon). */
  cores?: CoreSplit;
  logDir: string;
}

/** A run's CPU seconds by process as milliseconds per bound claim (undefined for records without the split). */
export function cpuMsPerBindingByProcess(r: Pick<BindingRun, 'cpuSeconds' | 'bound'>): CpuSplit | undefined {
  const c = r.cpuSeconds;
  if (!c || r.bound === 0) return undefined;
  const ms = (s: number): number => (s / r.bound) * 1000;
  return { binder: ms(c.binder), apiserver: ms(c.apiserver), etcd: ms(c.etcd), bench: ms(c.bench) };
}

/** Bound counts over time from the monotonic times claims reached Bound, downsampled for a plot. */
export function timeline(times: Iterable<number>, from: number, points = 200): [number, number][] {
  const sorted = [...times].sort((a, b) => a - b);
  const step = Math.max(1, Math.floor(sorted.length / points));
  const out: [number, number][] = [[0, 0]];
  for (let i = step - 1; i < sorted.length; i += step) out.push([(sorted[i]! - from) / 1000, i + 1]);
  const last = sorted.length;
  if (last > 0 && out[out.length - 1]![1] !== last) out.push([(sorted[last - 1]! - from) / 1000, last]);
  return out;
}

/** The latency distribution as 101 percentiles, for a CDF plot. */
export function cdf(values: readonly number[]): [number, number][] {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return [];
  return Array.from({ length: 101 }, (_, p) => [percentile(sorted, p), p / 100]);
}

/** What both orders derive the same way from when each claim was seen Bound, relative to their clock start. */
export type BoundFigures = Pick<BindingRun, 'bound' | 'firstBoundSeconds' | 'allBoundSeconds' | 'pairsPerSecond' | 'writes' | 'fractionOfCeiling' | 'boundTimeline'> & { cpuMsPerBinding: number };

export function boundFigures(boundTimes: readonly number[], clockStart: number, cpuSeconds: number, writes: VolumeWrites, ceiling: WriteCeiling): BoundFigures {
  const bound = boundTimes.length;
  const first = boundTimes.reduce((a, b) => Math.min(a, b), Infinity);
  const last = boundTimes.reduce((a, b) => Math.max(a, b), clockStart);
  const allBoundSeconds = (last - clockStart) / 1000;
  const pairsPerSecond = bound / allBoundSeconds;
  return {
    bound,
    firstBoundSeconds: (first - clockStart) / 1000,
    allBoundSeconds,
    pairsPerSecond,
    cpuMsPerBinding: (cpuSeconds * 1000) / bound,
    writes: { ...writes, perBinding: writes.total / bound },
    fractionOfCeiling: pairsPerSecond / ceiling.bindingsPerSecond,
    boundTimeline: timeline(boundTimes, clockStart),
  };
}
