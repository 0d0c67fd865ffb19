import type { Runnable } from './runnable.js';

/**
 * One loop's runnables, started in order and stopped in reverse (what starts later may depend on
 * what started before it, as the GetCapacity calls on the workers that start them). Before this
 * process leads the loop's Lease only the runnables that need no Lease may start; the others follow
 * once it leads (controller-runtime's LeaderElectionRunnable).
 */
export class RunnableGroup {
  private readonly started = new Set<Runnable>();
  private readonly halt = new AbortController();
  private stopped = false;

  constructor(
    readonly runnables: readonly Runnable[],
    /** A runnable's start rejected (its work ended with an error). */
    private readonly onError: (r: Runnable, err: unknown) => void = () => undefined,
  ) {}

  /** Starts, in order, the runnables not yet started that may run now. No-op once stopped. */
  start(leading: boolean): void {
    if (this.stopped) return;
    for (const r of this.runnables) {
      if (this.started.has(r) || (!leading && r.needLeaderElection !== false)) continue;
      this.started.add(r);
      r.start(this.halt.signal).catch((err: unknown) => this.onError(r, err));
    }
  }

  /**
   * Stops every runnable (started or not: those not started then never start), in reverse order,
   * within timeoutMs in all. If one did not end in time, aborts the signal they were started with:
   * whatever still runs is abandoned. True if all of them ended in time.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopped = true;
    const deadline = Date.now() + timeoutMs;
    let all = true;
    for (const r of [...this.runnables].reverse()) {
      if (!(await r.stop(Math.max(0, deadline - Date.now())))) all = false;
    }
    if (!all) this.halt.abort();
    return all;
  }
}
