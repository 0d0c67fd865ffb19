import { performance } from 'node:perf_hooks';
import { gauge } from '../metrics/registry.js';

const skewGauge = gauge({
  name: 'topovol_apiserver_clock_skew_seconds',
  help: "How far the API server's clock (the Date header of its answers, to about a second) is ahead of this process's wall clock; negative: behind.",
});

/** Samples kept; the estimate is their median, so one answer delayed in a queue does not move it. */
const SAMPLES = 7;
/** How far the median may stray from the estimate before the estimate follows it. */
const JITTER_MS = 1_000;
/** At most one sample per second: the Date header has a resolution of one second anyway. */
const MIN_SAMPLE_GAP_MS = 1_000;

/**
 * The API server's wall clock, as read from the `Date` header of its answers. Timestamps that
 * several processes write and others judge (the expiry times of the aggregated capacity status,
 * written by one instance per node) are taken on this clock instead of each node's own, so the
 * nodes' clocks need not agree (docs/capacity-status.md, "Clocks").
 *
 * Each sample is the header's second plus half a second (the header truncates), less the local
 * monotonic time at which the answer's headers arrived; the estimate is the median of the last few,
 * followed only when it strays more than a second. Between samples it advances with the monotonic
 * clock, so a local clock step changes nothing.
 * Until the first answer it is the local wall clock.
 */
export class ServerClock {
  private readonly offsets: number[] = [];
  private offset?: number;
  private lastSampleAt = -Infinity;

  constructor(
    private readonly monotonic: () => number = () => performance.now(),
    private readonly wall: () => number = Date.now,
  ) {}

  /** Records an answer's Date header, read at `atMonotonic` (when its headers arrived). */
  observe(date: string | string[] | undefined, atMonotonic: number): void {
    if (atMonotonic - this.lastSampleAt < MIN_SAMPLE_GAP_MS || typeof date !== 'string') return;
    const serverMs = Date.parse(date);
    if (Number.isNaN(serverMs)) return;
    this.lastSampleAt = atMonotonic;
    this.offsets.push(serverMs + 500 - atMonotonic);
    if (this.offsets.length > SAMPLES) this.offsets.shift();
    const sorted = [...this.offsets].sort((a, b) => a - b);
    const median = sorted[sorted.length >> 1]!;
    // Each sample is off by up to half a second (the header's resolution): the estimate moves only
    // when the median is further away than that, so it does not step back and forth with them.
    if (this.offset === undefined || Math.abs(median - this.offset) > JITTER_MS) this.offset = median;
    skewGauge.set(Math.round(this.now() - this.wall()) / 1000);
  }

  /** Milliseconds since the epoch on the API server's clock (the local one until an answer came). */
  now(): number {
    return this.offset === undefined ? this.wall() : this.monotonic() + this.offset;
  }

  /** How far the local wall clock is behind the API server's (negative: ahead), or undefined before any answer. */
  skewMs(): number | undefined {
    return this.offset === undefined ? undefined : this.now() - this.wall();
  }
}
