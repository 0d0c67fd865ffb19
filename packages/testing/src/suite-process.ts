/**
 * A process a suite's hook starts, stopped by its after hook even when the start outlived the hook:
 * mocha fails a hook at its timeout but the hook's promise goes on, so a process assigned only after
 * `await start()` would be assigned after the after hook had found nothing to stop, and would run
 * on into the files after it (a kube-controller-manager binding their claims). stop() stops the
 * process now, or as soon as its start ends.
 */
export class SuiteProcess<P extends { stop(): Promise<void> }> {
  private starting?: Promise<P>;

  start(start: () => Promise<P>): Promise<P> {
    const s = start();
    this.starting = s;
    return s;
  }

  async stop(): Promise<void> {
    const s = this.starting;
    this.starting = undefined;
    // A start that failed has nothing to stop (its own failure is the hook's).
    const p = await s?.catch(() => undefined);
    await p?.stop();
  }
}
