import type { ProvisioningObservation } from './rollback-world.js';

/**
 * What this process saw of claims being provisioned (observeProvisioning), by claim uid: memory
 * only, so a restart sees afresh, never marks what it did not see, nor vouches for an unused mark
 * it did not see made. Observations are forgotten for a whole namespace when the evidence that could
 * refute them there was (EndedUse's eviction); none is noted in that namespace until the claims
 * were listed after that (`claimsListedSince`), since a claim state older than the forgotten use
 * could hide it. Other namespaces go on: a forgotten use is evidence about its own namespace's
 * claims only, so a tenant flooding its namespace does not stop observation in others'.
 */
export class ProvisioningObservations {
  private readonly byUid = new Map<string, { seen: ProvisioningObservation; namespace: string }>();
  /** By namespace, a list-order mark (Informer's listOrderMark): its claims must have been listed after it to be observed. */
  private readonly staleBefore = new Map<string, number>();

  /**
   * @param claimsListedSince whether the claims' cache reflects a list asked for after the mark.
   * @param mark a new list-order mark (nothing listed yet was asked for after it).
   */
  constructor(
    private readonly claimsListedSince: (mark: number) => boolean,
    private readonly mark: () => number,
  ) {}

  get(claimUid: string): ProvisioningObservation | undefined {
    return this.byUid.get(claimUid)?.seen;
  }

  get size(): number {
    return this.byUid.size;
  }

  /**
   * Notes what was seen of the claim's provisioning; 'changed' when it was new or differs, 'same',
   * or 'notYet' while the claims have not been listed since observations were last forgotten.
   */
  note(claimUid: string, namespace: string, seen: ProvisioningObservation): 'changed' | 'same' | 'notYet' {
    const stale = this.staleBefore.get(namespace);
    if (stale !== undefined) {
      if (!this.claimsListedSince(stale)) return 'notYet';
      this.staleBefore.delete(namespace);
    }
    const had = this.byUid.get(claimUid)?.seen;
    if (had && had.node === seen.node && had.podUid === seen.podUid) return 'same';
    this.byUid.set(claimUid, { seen, namespace });
    return 'changed';
  }

  delete(claimUid: string): void {
    this.byUid.delete(claimUid);
  }

  /** Every observation goes (a gap in the pod watch: the caller relists the claims after the pods). */
  clear(): void {
    this.byUid.clear();
  }

  /**
   * The observations of claims in these namespaces go, and none is noted until the claims were listed
   * after now: the caller asks for that list. Returns how many went.
   */
  forgetNamespaces(namespaces: ReadonlySet<string>): number {
    const mark = this.mark();
    for (const ns of namespaces) this.staleBefore.set(ns, mark);
    let n = 0;
    for (const [uid, o] of this.byUid) {
      if (!namespaces.has(o.namespace)) continue;
      this.byUid.delete(uid);
      n++;
    }
    return n;
  }
}
