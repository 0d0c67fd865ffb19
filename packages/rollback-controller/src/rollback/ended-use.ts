import { splitKey } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
/** How long an entry is kept for a claim this process has not cached (see EndedUse). */
export const ENDED_USE_ABSENT_TTL_MS = 60 * 60_000;
/**
 * How much earlier than a claim's deletion a use must have begun to be forgotten with it. The two
 * times come from two writes, which in an HA control plane two API servers may have stamped, their
 * clocks apart; a use kept by the margin at worst keeps a re-created claim's volume from being
 * rolled back, a use forgotten wrongly could let one that holds data be.
 */
export const ENDED_USE_CLOCK_MARGIN_MS = 30_000;
/** How often, at most, record() looks for entries to drop. */
const PRUNE_EVERY_MS = 60_000;
/**
 * The most entries kept for claims not cached, in one namespace and in all. Legitimately few: a
 * pod's claims are cached while it runs, and a claim's delete forgets its uses. Pods naming claims
 * that never come (a tenant creating and deleting them in a loop, each with many volumes) would
 * otherwise be bounded only by the pod deletion rate times the TTL.
 */
export const ENDED_USE_MAX_ABSENT_PER_NAMESPACE = 1_000;
export const ENDED_USE_MAX_ABSENT = 10_000;
/** How often, at most, record() prunes while a cap may be passed. */
const PRUNE_OVER_CAP_EVERY_MS = 1_000;

const namespaceOf = (claimKey: string): string => splitKey(claimKey).namespace ?? '';

/**
 * Pods that were scheduled or ran and then were deleted, by the claims they named: evidence that
 * the claim's volume may hold data (usedEvidence) that outlives the pod. Recorded for every such
 * pod, whatever this process knows of the claim: the claim watch may lag the pod watch, so a claim
 * may be seen Pending with a selected node (its provisioning observed) only after a pod that used
 * its volume came and went, and that use must still count then.
 *
 * Bounded: a claim's delete event drops the entry when every use in it provably began before that
 * claim's deletion was asked for (forget); one whose claim is not cached goes an hour after it was
 * recorded, far longer than a claim watch here lags before it is cut and re-established (its
 * watches end within ten minutes, and a relist replaces the whole cache). Past
 * ENDED_USE_MAX_ABSENT_PER_NAMESPACE entries of claims not cached in a namespace, its oldest go;
 * past ENDED_USE_MAX_ABSENT in all, the oldest of the namespaces holding the most (fairShare); and
 * `evicted` is told in which namespaces: a use
 * forgotten so may be the only evidence that a volume there holds data, so the loop must stop
 * vouching for unused marks there, and observe none until its claims are listed again.
 */
export class EndedUse {
  /** `usedSince`: the latest start among the uses recorded (server time, ms); Infinity when one is unknown. */
  private readonly byClaim = new Map<string, { why: string; at: number; usedSince: number }>();
  /** Entries by namespace (cached claims' too): when one may have passed its cap. */
  private readonly perNamespace = new Map<string, number>();
  private prunedAt = 0;

  constructor(
    private readonly claimCached: (claimKey: string) => boolean,
    private readonly evicted: (namespaces: ReadonlySet<string>, count: number) => void = () => undefined,
  ) {}

  /**
   * A pod that used the claim (`why`) was deleted; `usedSince` is when it was scheduled (server
   * time, ms: podScheduledAt), undefined when its last state does not say.
   */
  record(claimKey: string, why: string, now: number, usedSince?: number): void {
    const since = usedSince ?? Infinity;
    const prev = this.byClaim.get(claimKey);
    // Deleted first, so that the Map's order (the order evictions go by) is the order of the last records.
    this.remove(claimKey);
    this.byClaim.set(claimKey, { why, at: now, usedSince: Math.max(since, prev?.usedSince ?? -Infinity) });
    const ns = namespaceOf(claimKey);
    const inNamespace = (this.perNamespace.get(ns) ?? 0) + 1;
    this.perNamespace.set(ns, inNamespace);
    const overCap = inNamespace > ENDED_USE_MAX_ABSENT_PER_NAMESPACE || this.byClaim.size > ENDED_USE_MAX_ABSENT;
    if (now - this.prunedAt >= (overCap ? PRUNE_OVER_CAP_EVERY_MS : PRUNE_EVERY_MS)) this.prune(now);
  }

  get(claimKey: string): string | undefined {
    return this.byClaim.get(claimKey)?.why;
  }

  /**
   * A claim of that name was deleted, its deletion asked for at `deletedAt` (server time, ms;
   * undefined when its last state does not say). A claim created again under the name starts
   * afresh, but only uses that began before that deletion are the deleted claim's: a pod scheduled
   * then holds the claim until it ends (pvc-protection), so no claim of the name can be created
   * meanwhile, and none is scheduled onto a claim being deleted (kube-scheduler's VolumeBinding
   * refuses it; the kubelet starts one scheduled before, while the finalizer it holds is there). A pod scheduled later used a claim created
   * since, whose delete the claim watch, lagging the pod watch, may deliver only now: that use is
   * kept; so is any whose start is unknown, which at worst keeps a re-created claim's volume from
   * being rolled back. "Before" with ENDED_USE_CLOCK_MARGIN_MS to spare.
   */
  forget(claimKey: string, deletedAt?: number): void {
    const e = this.byClaim.get(claimKey);
    if (e && deletedAt !== undefined && e.usedSince + ENDED_USE_CLOCK_MARGIN_MS < deletedAt) this.remove(claimKey);
  }

  private remove(claimKey: string): void {
    if (!this.byClaim.delete(claimKey)) return;
    const ns = namespaceOf(claimKey);
    const left = (this.perNamespace.get(ns) ?? 1) - 1;
    if (left > 0) this.perNamespace.set(ns, left);
    else this.perNamespace.delete(ns);
  }

  get size(): number {
    return this.byClaim.size;
  }

  /**
   * Drops the entries of claims not cached, recorded more than ENDED_USE_ABSENT_TTL_MS ago, then the
   * oldest of them past a namespace's cap and past the cap of all (each down to half of it, so that a
   * stream of them does not evict on every record), telling `evicted` in which namespaces.
   */
  prune(now: number): void {
    this.prunedAt = now;
    const absent: string[] = [];
    const absentIn = new Map<string, string[]>();
    for (const [k, e] of this.byClaim) {
      if (this.claimCached(k)) continue;
      if (now - e.at > ENDED_USE_ABSENT_TTL_MS) {
        this.remove(k);
        continue;
      }
      absent.push(k);
      const ns = namespaceOf(k);
      const keys = absentIn.get(ns);
      if (keys) keys.push(k);
      else absentIn.set(ns, [k]);
    }
    // A Map iterates in insertion order (record() re-inserts): the first are the oldest.
    const drop = new Set<string>();
    for (const keys of absentIn.values()) {
      if (keys.length > ENDED_USE_MAX_ABSENT_PER_NAMESPACE) for (const k of keys.slice(0, keys.length - ENDED_USE_MAX_ABSENT_PER_NAMESPACE / 2)) drop.add(k);
    }
    const left = absent.length - drop.size;
    if (left > ENDED_USE_MAX_ABSENT) {
      // From the namespaces holding the most first (each keeps at most `share`, its newest): a tenant
      // flooding several namespaces of its own evicts its own uses, not a namespace that holds a few.
      const remaining = [...absentIn.values()].map((keys) => keys.filter((k) => !drop.has(k)));
      const share = fairShare(remaining.map((keys) => keys.length), ENDED_USE_MAX_ABSENT / 2);
      for (const keys of remaining) if (keys.length > share) for (const k of keys.slice(0, keys.length - share)) drop.add(k);
    }
    if (drop.size === 0) return;
    const namespaces = new Set<string>();
    for (const k of drop) {
      this.remove(k);
      namespaces.add(namespaceOf(k));
    }
    this.evicted(namespaces, drop.size);
  }
}

/**
 * The largest whole `share` such that keeping at most `share` of each count keeps no more than
 * `total` in all (counts at or below it are kept whole): water-filling from the smallest.
 */
export function fairShare(counts: readonly number[], total: number): number {
  const sorted = [...counts].sort((a, b) => a - b);
  let budget = total;
  for (let i = 0; i < sorted.length; i++) {
    const rest = sorted.length - i;
    if (sorted[i]! * rest > budget) return Math.floor(budget / rest);
    budget -= sorted[i]!;
  }
  return sorted.length > 0 ? sorted[sorted.length - 1]! : 0;
}

/**
 * When an object's deletion was asked for, from its last state (ms), or undefined: its
 * deletionTimestamp less the grace period the API server added to it (a claim's has none).
 */
export function deletionRequestedAt(meta: { deletionTimestamp?: string; deletionGracePeriodSeconds?: number } | undefined): number | undefined {
  const t = timeOf(meta?.deletionTimestamp);
  return t === undefined ? undefined : t - (meta?.deletionGracePeriodSeconds ?? 0) * 1000;
}

/**
 * When a pod was scheduled (ms), or undefined: its PodScheduled condition turned True, which the API
 * server stamps when it binds the pod to a node, and never earlier than the pod's creation (also the
 * API server's clock). For a pod created with spec.nodeName the condition is the kubelet's, on the
 * node's clock, which may run behind: the creation bounds it from below, and such a pod holds its
 * claim from its creation on (pvc-protection), so its creation is when its use began.
 */
export function podScheduledAt(p: Pod): number | undefined {
  const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'True');
  const scheduled = timeOf(c?.lastTransitionTime);
  const created = timeOf(p.metadata?.creationTimestamp);
  if (scheduled === undefined) return undefined;
  return created === undefined ? scheduled : Math.max(scheduled, created);
}

/** An RFC 3339 timestamp as it comes over the wire (Wire<T>), in ms; undefined when absent or unreadable. */
function timeOf(ts: string | undefined): number | undefined {
  const t = ts === undefined ? NaN : Date.parse(ts);
  return Number.isNaN(t) ? undefined : t;
}
