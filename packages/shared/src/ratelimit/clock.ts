/** Cancels a timer; calling it after the timer fired (or twice) is harmless. */
export type Cancel = () => void;

/**
 * Time as the rate limiters and the work queue see it. Injected so tests can drive backoffs and
 * delayed adds deterministically with a FakeClock instead of sleeping.
 */
export interface Clock {
  /** Milliseconds; only differences are meaningful. */
  now(): number;
  /** Runs fn once, ms from now (ms <= 0: as soon as possible); returns a function that cancels it. */
  setTimeout(fn: () => void, ms: number): Cancel;
}

// Node clamps delays above 2^31-1 ms to 1 ms, which would turn a long requeue into an immediate
// one; longer delays are therefore waited out in chunks.
const MAX_NODE_DELAY_MS = 2 ** 31 - 1;

/** The process clock: monotonic (immune to wall-clock steps) but epoch-based for readability. */
export const realClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout(fn: () => void, ms: number): Cancel {
    let handle: NodeJS.Timeout | undefined;
    let cancelled = false;
    const due = realClock.now() + Math.max(0, ms);
    const arm = (): void => {
      const left = due - realClock.now();
      handle = setTimeout(
        () => {
          if (cancelled) return;
          if (left > MAX_NODE_DELAY_MS) arm();
          else fn();
        },
        Math.min(Math.max(0, left), MAX_NODE_DELAY_MS),
      );
    };
    arm();
    return () => {
      cancelled = true;
      clearTimeout(handle);
    };
  },
};

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to. Timers fire synchronously inside advance(), in due-time
 * order (registration order for ties), so tests observe the resulting state right after it.
 */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  // Kept sorted by (at, seq); tests hold few timers, so sorted insertion is plenty.
  private timers: FakeTimer[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): Cancel {
    const timer: FakeTimer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    let i = this.timers.length;
    while (i > 0 && this.timers[i - 1]!.at > timer.at) i--;
    this.timers.splice(i, 0, timer);
    return () => {
      const j = this.timers.indexOf(timer);
      if (j >= 0) this.timers.splice(j, 1);
    };
  }

  /**
   * Moves time forward by ms, firing every timer that becomes due on the way, including timers
   * registered by firing ones if they fall within the window. now() reads each timer's due time
   * while it runs, as it would in real life.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    const end = this.t + ms;
    for (let next = this.timers[0]; next !== undefined && next.at <= end; next = this.timers[0]) {
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    // A timer callback may itself have advanced further; time never goes back.
    this.t = Math.max(this.t, end);
  }

  /** Timers registered and neither fired nor cancelled. */
  pendingTimers(): number {
    return this.timers.length;
  }
}
