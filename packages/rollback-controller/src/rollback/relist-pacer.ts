/** How soon after one list of the claims for forgotten uses (EndedUse's eviction) another may be asked for. */
export const EVICTION_RELIST_MIN_INTERVAL_MS = 30_000;

/** Runs `fn` after `ms`, without keeping the process alive for it. */
export type Schedule = (fn: () => void, ms: number) => void;

const unrefTimeout: Schedule = (fn, ms) => {
  setTimeout(fn, ms).unref();
};

/**
 * Asks for the claims to be listed again at most once per interval: a request inside it is put off
 * to its end, and requests meanwhile fold into that one. A tenant whose deleted pods keep passing
 * its namespace's bound (a burst a second) would otherwise have the API server list every claim in
 * the cluster back to back; only that tenant's namespaces wait for the list (ProvisioningObservations).
 */
export class RelistPacer {
  private last = -Infinity;
  private pending = false;

  constructor(
    private readonly relist: () => void,
    private readonly minIntervalMs = EVICTION_RELIST_MIN_INTERVAL_MS,
    private readonly now: () => number = Date.now,
    private readonly schedule: Schedule = unrefTimeout,
  ) {}

  request(): void {
    if (this.pending) return;
    const wait = this.last + this.minIntervalMs - this.now();
    if (wait <= 0) {
      this.fire();
      return;
    }
    this.pending = true;
    this.schedule(() => {
      this.pending = false;
      this.fire();
    }, wait);
  }

  private fire(): void {
    this.last = this.now();
    this.relist();
  }
}
