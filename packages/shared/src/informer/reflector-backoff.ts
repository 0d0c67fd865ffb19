/**
 * client-go's reflector paces a failing list or watch with
 * `wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)` (client-go tools/cache/reflector.go):
 * 800 ms doubling to a 30 s cap, each wait jittered up to twice its step, so a server that keeps
 * failing sees one list or watch every 30-60 s per informer (about 0.02 per second), not one a
 * second; and when no step was taken for 2 minutes the server is taken as healthy again and the
 * next step starts at 800 ms. Topovol's informers use the same numbers.
 */
export const REFLECTOR_BACKOFF = { startMs: 800, maxMs: 30_000, resetAfterMs: 120_000 } as const;

export interface ReflectorBackoffOptions {
  startMs?: number;
  maxMs?: number;
  resetAfterMs?: number;
  now?: () => number;
  /** In [0, 1); the jitter's share of the step (client-go's jitter factor 1.0). */
  random?: () => number;
}

/** The waits of one informer's failures: `next()` gives the next one and takes the step. */
export class ReflectorBackoff {
  readonly startMs: number;
  private readonly maxMs: number;
  private readonly resetAfterMs: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private stepMs: number;
  /** When the last step was taken; undefined before the first. */
  private lastStepAt: number | undefined;

  constructor(opts: ReflectorBackoffOptions = {}) {
    this.startMs = opts.startMs ?? REFLECTOR_BACKOFF.startMs;
    this.maxMs = Math.max(this.startMs, opts.maxMs ?? REFLECTOR_BACKOFF.maxMs);
    this.resetAfterMs = opts.resetAfterMs ?? REFLECTOR_BACKOFF.resetAfterMs;
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    this.stepMs = this.startMs;
  }

  /** The wait before the next list or watch after a failure: the current step, jittered, then the step doubles (to the cap). */
  next(): number {
    const now = this.now();
    // As the backoff manager: quiet for longer than resetAfterMs since the last step means healthy.
    if (this.lastStepAt !== undefined && now - this.lastStepAt > this.resetAfterMs) this.stepMs = this.startMs;
    this.lastStepAt = now;
    const wait = this.stepMs * (1 + this.random());
    this.stepMs = Math.min(this.stepMs * 2, this.maxMs);
    return wait;
  }
}
