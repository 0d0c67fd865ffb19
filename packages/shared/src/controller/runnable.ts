/**
 * Work the manager starts once a loop's caches have synced (and, unless it says otherwise, once
 * this process leads the loop's Lease), and stops at shutdown: controller-runtime's
 * manager.Runnable and LeaderElectionRunnable. A Controller is one; work that does not reconcile
 * keys (a writer on its own timer, calls that outlive their reconcile) is another, so that it
 * never occupies a worker. The manager starts a loop's runnables in order and stops them in
 * reverse order.
 */
export interface Runnable {
  /** Names it in logs. */
  readonly name: string;
  /** false: runs on every replica, without the loop's Lease. Default true. */
  readonly needLeaderElection?: boolean;
  /**
   * Starts the work; resolves once it has ended. `signal` aborts when the manager gives up
   * waiting for it at shutdown: what is still in flight is abandoned.
   */
  start(signal: AbortSignal): Promise<void>;
  /**
   * Ends the work and waits up to timeoutMs for what is in flight; true if it ended in time.
   * Safe before start (the work then never starts).
   */
  stop(timeoutMs: number): Promise<boolean>;
}

export interface RunnableFuncOptions {
  needLeaderElection?: boolean;
}

/**
 * A Runnable around a function that works until its signal aborts (controller-runtime's
 * RunnableFunc): stop aborts that signal and waits for the function to return.
 */
export function runnableFunc(name: string, run: (signal: AbortSignal) => Promise<void>, opts: RunnableFuncOptions = {}): Runnable {
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  return {
    name,
    needLeaderElection: opts.needLeaderElection ?? true,
    start(signal) {
      running ??= stopping.signal.aborted ? Promise.resolve() : run(AbortSignal.any([signal, stopping.signal]));
      return running;
    },
    async stop(timeoutMs) {
      stopping.abort();
      if (!running) return true;
      return waitAtMost(running, timeoutMs);
    },
  };
}

/** Resolves after ms or on abort (at once if it already has); its abort listener is removed either way (one per retry would leak). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves once the signal has aborted (at once if it already has). */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** True once `p` settled, false if timeoutMs passed first. */
export async function waitAtMost(p: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
  });
  const ended = p.then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([ended, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
