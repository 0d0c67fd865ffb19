import { doublingBackoffMs } from '@topovol/shared';
import { parametersKey } from './running-requests.js';

/** Longest wait between two questions to a driver that keeps answering Unimplemented. */
const MAX_RETRY_MS = 3_600_000;

/**
 * What the capacity loop knows of a driver that answered GetCapacity with Unimplemented for one set
 * of parameters (UnimplementedVerdicts): why, when to ask again (doubling from `retryMs` while it
 * lasts, up to an hour), how many periods in a row it did, and whether the one call of this period
 * is running. external-provisioner retries every item with its work queue's backoff, as for any
 * error; one call per period for all the segments of those parameters tells as much for fewer
 * calls, and a driver upgraded in place is still noticed (docs/divergences.md).
 */
export class UnimplementedVerdict {
  private verdict?: { message: string; retryAt: number; count: number; probing: boolean };
  /**
   * Verdicts so far. A call remembers the count it started under: one started before the latest
   * verdict was asked before it was known, and its Unimplemented says nothing new.
   */
  private verdicts = 0;

  constructor(
    private readonly retryMs: number,
    private readonly now: () => number,
  ) {}

  /** The driver's message while it is held unsupported. */
  get message(): string | undefined {
    return this.verdict?.message;
  }

  /** Milliseconds until the next call may go; 0 when it may go now (or nothing is held). */
  waitMs(): number {
    return this.verdict ? Math.max(0, this.verdict.retryAt - this.now()) : 0;
  }

  /** This period's one call is running: the others wait for its end. */
  get probing(): boolean {
    return this.verdict?.probing ?? false;
  }

  /** A call starts: whether it is this period's probe, and the count it starts under. */
  begin(): { probe: boolean; asked: number } {
    if (this.verdict) this.verdict.probing = true;
    return { probe: this.verdict !== undefined, asked: this.verdicts };
  }

  /** A call ends, whatever its answer. */
  end(probe: boolean): void {
    if (probe && this.verdict) this.verdict.probing = false;
  }

  /** A verdict came after a call that started under `asked` waited for its slot: it need not ask. */
  decidedSince(asked: number): boolean {
    return this.verdict !== undefined && this.verdicts > asked;
  }

  /**
   * The driver answered Unimplemented to a call started under `asked`. 'first' when this starts a
   * verdict (say so once), 'again' when it renews one, 'stale' when the call was asked before the
   * latest verdict (every item's call at start-up counts as one).
   */
  record(message: string, asked: number): { kind: 'first' | 'again' | 'stale'; retryInMs: number } {
    if (this.verdict && asked < this.verdicts) return { kind: 'stale', retryInMs: this.waitMs() };
    this.verdicts++;
    const count = (this.verdict?.count ?? 0) + 1;
    const wait = doublingBackoffMs(this.retryMs, count, MAX_RETRY_MS);
    const first = !this.verdict;
    this.verdict = { message, retryAt: this.now() + wait, count, probing: false };
    return { kind: first ? 'first' : 'again', retryInMs: wait };
  }

  /** The driver answered: the verdict ends. Returns how many periods it lasted, if one was held. */
  clear(): number | undefined {
    const count = this.verdict?.count;
    this.verdict = undefined;
    return count;
  }
}

/** What a verdict is looked up by: an item's parameters, and its class for the status. */
export interface ParametersOfClass {
  parameters: Readonly<Record<string, string>>;
  item: { storageClassName: string };
}

/**
 * The verdicts held, one per set of class parameters: a driver may implement GetCapacity for some
 * parameters only (one kind of pool and not another), and a verdict for one set must not stop the
 * figures of the others, which kube-scheduler keeps reading. Segments share their parameters'
 * verdict: a driver without GetCapacity answers the same for every topology, and a new node does not
 * cost a call.
 */
export class UnimplementedVerdicts {
  private readonly held = new Map<string, UnimplementedVerdict>();

  constructor(
    private readonly retryMs: number,
    private readonly now: () => number,
  ) {}

  /** The verdict for these parameters, if one is held or a call under it runs. */
  of(parameters: Readonly<Record<string, string>>): UnimplementedVerdict | undefined {
    return this.held.get(parametersKey(parameters));
  }

  /** The verdict for these parameters, made empty if there is none (a call starts, or Unimplemented lands). */
  for(parameters: Readonly<Record<string, string>>): UnimplementedVerdict {
    const k = parametersKey(parameters);
    let v = this.held.get(k);
    if (!v) this.held.set(k, (v = new UnimplementedVerdict(this.retryMs, this.now)));
    return v;
  }

  /**
   * The driver answered for these parameters: their verdict ends; how many periods it lasted, if one
   * was held. Ended in place (the entry goes with its parameters, keepOnly): a call of the same
   * parameters still running records its answer where the loop looks.
   */
  clear(parameters: Readonly<Record<string, string>>): number | undefined {
    return this.held.get(parametersKey(parameters))?.clear();
  }

  /** One held verdict's message (the loop's condition names one), or undefined if none is held. */
  get message(): string | undefined {
    for (const v of this.held.values()) if (v.message !== undefined) return v.message;
    return undefined;
  }

  /**
   * What the status says of the held verdicts, or undefined if none is held: the first class held,
   * how many more are, and the driver's message (the other classes are tracked meanwhile).
   */
  describe(items: Iterable<ParametersOfClass>): string | undefined {
    const held = new Map<string, string>();
    for (const d of items) {
      const m = this.of(d.parameters)?.message;
      if (m !== undefined && !held.has(d.item.storageClassName)) held.set(d.item.storageClassName, m);
    }
    if (held.size === 0) return this.message;
    // Sorted: the cache's order would change the message, and rewrite the status, from one sync to the next.
    const [first] = [...held.keys()].sort();
    const message = held.get(first!)!;
    return held.size === 1 ? `StorageClass ${first}: ${message}` : `StorageClass ${first} and ${held.size - 1} more: ${message}`;
  }

  /** The keys of the items asking with these parameters (they share a verdict). */
  itemsWith(items: ReadonlyMap<string, ParametersOfClass>, parameters: Readonly<Record<string, string>>): string[] {
    const k = parametersKey(parameters);
    return [...items].filter(([, d]) => parametersKey(d.parameters) === k).map(([key]) => key);
  }

  /** Verdicts of parameters no item asks with any longer go (their classes were deleted or changed). */
  keepOnly(parameters: Iterable<Readonly<Record<string, string>>>): void {
    const keep = new Set([...parameters].map(parametersKey));
    for (const k of this.held.keys()) if (!keep.has(k)) this.held.delete(k);
  }
}
