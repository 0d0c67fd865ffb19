/** How long an entry is kept for a claim this process has not cached (see EndedUse). */
export const ENDED_USE_ABSENT_TTL_MS = 60 * 60_000;
/** How often, at most, record() looks for entries to drop. */
const PRUNE_EVERY_MS = 60_000;

/**
 * Pods that were scheduled or ran and then were deleted, by the claims they named: evidence that
 * the claim's volume may hold data (usedEvidence) that outlives the pod. Recorded for every such
 * pod, whatever this process knows of the claim: the claim watch may lag the pod watch, so a claim
 * may be seen Pending with a selected node (its provisioning observed) only after a pod that used
 * its volume came and went, and that use must still count then.
 *
 * Bounded: an entry goes with its claim's delete event (forget); one whose claim is not cached goes
 * an hour after it was recorded, far longer than a claim watch here lags before it is cut and
 * re-established (its watches end within ten minutes, and a relist replaces the whole cache).
 */
export class EndedUse {
  private readonly byClaim = new Map<string, { why: string; at: number }>();
  private prunedAt = 0;

  constructor(private readonly claimCached: (claimKey: string) => boolean) {}

  record(claimKey: string, why: string, now: number): void {
    this.byClaim.set(claimKey, { why, at: now });
    if (now - this.prunedAt >= PRUNE_EVERY_MS) this.prune(now);
  }

  get(claimKey: string): string | undefined {
    return this.byClaim.get(claimKey)?.why;
  }

  /** The claim was deleted: a claim created again under its name starts afresh. */
  forget(claimKey: string): void {
    this.byClaim.delete(claimKey);
  }

  get size(): number {
    return this.byClaim.size;
  }

  /** Drops the entries of claims not cached, recorded more than ENDED_USE_ABSENT_TTL_MS ago. */
  prune(now: number): void {
    this.prunedAt = now;
    for (const [k, e] of this.byClaim) if (now - e.at > ENDED_USE_ABSENT_TTL_MS && !this.claimCached(k)) this.byClaim.delete(k);
  }
}
