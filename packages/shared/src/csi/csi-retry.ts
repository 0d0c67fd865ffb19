import { isRetryableCsiError } from './csi-error.js';

export interface CsiRetryOptions {
  /** Total tries including the first (default 5). */
  attempts?: number;
  /** Pause before the second try (default 100 ms); it grows by `factor` per try. */
  initialDelayMs?: number;
  factor?: number;
  /** Cap on one pause (default 10 s). */
  maxDelayMs?: number;
  /** Fraction of random extra pause, so many callers retrying together spread out (default 0.1). */
  jitter?: number;
  /** Which failures to retry (default: isRetryableCsiError). */
  retryable?: (err: unknown) => boolean;
  /** Called before each pause; for logs and metrics. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Stops retrying (the last error is thrown) once aborted. */
  signal?: AbortSignal;
}

const DEFAULTS = { attempts: 5, initialDelayMs: 100, factor: 2, maxDelayMs: 10_000, jitter: 0.1 };

/** The pause after failed try number `attempt` (1-based), before jitter: initial × factor^(attempt-1), capped. */
export function csiBackoffDelay(attempt: number, opts: Pick<CsiRetryOptions, 'initialDelayMs' | 'factor' | 'maxDelayMs'> = {}): number {
  const initial = opts.initialDelayMs ?? DEFAULTS.initialDelayMs;
  const factor = opts.factor ?? DEFAULTS.factor;
  const max = opts.maxDelayMs ?? DEFAULTS.maxDelayMs;
  return Math.min(max, initial * factor ** Math.max(0, attempt - 1));
}

/**
 * Runs `call` until it succeeds, fails with a non-retryable error, or the tries run out; pauses
 * with exponential backoff between tries. `call` gets the 1-based try number. The last error is
 * thrown as is (a CsiError keeps its code).
 */
export async function withCsiRetry<T>(call: (attempt: number) => Promise<T>, opts: CsiRetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, opts.attempts ?? DEFAULTS.attempts);
  const retryable = opts.retryable ?? ((err: unknown) => isRetryableCsiError(err));
  const jitter = opts.jitter ?? DEFAULTS.jitter;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (err) {
      if (attempt >= attempts || !retryable(err) || opts.signal?.aborted) throw err;
      const delay = csiBackoffDelay(attempt, opts) * (1 + Math.random() * jitter);
      opts.onRetry?.(err, attempt, delay);
      const aborted = await sleep(delay, opts.signal);
      if (aborted) throw err;
    }
  }
}

/** Resolves true if the signal aborted the pause. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
