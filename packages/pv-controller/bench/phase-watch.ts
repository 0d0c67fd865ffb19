import { performance } from 'node:perf_hooks';
import { Informer, objectKey } from '@topovol/shared';
import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';

interface Phased extends KubeObject {
  status?: { phase?: string };
}

/**
 * What the bench watches for, per object: the key to record when a watch event shows the state
 * asked for (undefined otherwise), and the slim copy the informer keeps (keeping whole objects
 * would grow the bench's own heap with N).
 */
export interface Milestone {
  keyIfReached: (o: KubeObject) => string | undefined;
  slim: (o: KubeObject) => KubeObject;
}

const identity = (o: KubeObject): KubeObject['metadata'] => ({ name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion });

/** An object seen in a phase, recorded under its own key. */
export const phaseReached = (phase: string): Milestone => ({
  keyIfReached: (o) => ((o as Phased).status?.phase === phase ? objectKey(o) : undefined),
  slim: (o) => ({ metadata: identity(o), status: { phase: (o as Phased).status?.phase } }) as Phased,
});

interface ClaimRefd extends KubeObject {
  spec?: { claimRef?: { namespace?: string; name?: string } };
}

/** A volume seen with a claimRef, recorded under the claim's key (namespace/name). */
export const claimRefSeen: Milestone = {
  keyIfReached: (o) => {
    const ref = (o as ClaimRefd).spec?.claimRef;
    return ref?.name ? `${ref.namespace}/${ref.name}` : undefined;
  },
  slim: (o) => {
    const ref = (o as ClaimRefd).spec?.claimRef;
    return { metadata: identity(o), spec: ref ? { claimRef: { namespace: ref.namespace, name: ref.name } } : {} } as ClaimRefd;
  },
};

/**
 * One watch (the shared Informer) recording, per key, when a watch event first showed the
 * milestone (by default an object in a given phase), on the monotonic clock. Started before the
 * objects exist, so no transition is missed.
 */
export class PhaseWatch {
  readonly reachedAt = new Map<string, number>();
  private readonly informer: Informer<KubeObject>;
  private readonly milestone: Milestone;
  private waiters: { count: number; resolve: () => void }[] = [];
  /** Monotonic time of the last object reaching the phase (or of the watch's start). */
  private lastReachedAt = performance.now();

  constructor(client: KubeClient, resource: ResourceType, phaseOrMilestone: string | Milestone) {
    this.milestone = typeof phaseOrMilestone === 'string' ? phaseReached(phaseOrMilestone) : phaseOrMilestone;
    this.informer = new Informer<KubeObject>(client, resource, { transform: this.milestone.slim });
    const seen = (o: KubeObject): void => this.seen(o);
    this.informer.addEventHandler({ onAdd: seen, onUpdate: (_old, o) => seen(o) });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  private seen(o: KubeObject): void {
    const key = this.milestone.keyIfReached(o);
    if (key === undefined || this.reachedAt.has(key)) return;
    this.lastReachedAt = performance.now();
    this.reachedAt.set(key, this.lastReachedAt);
    if (this.waiters.length === 0) return;
    const n = this.reachedAt.size;
    this.waiters = this.waiters.filter((w) => {
      if (n < w.count) return true;
      w.resolve();
      return false;
    });
  }

  /**
   * Resolves true once `count` objects reached the phase; false if the timeout passes first, or if
   * `stallMs` pass with no object reaching it (a binder that stopped making progress).
   */
  waitForCount(count: number, timeoutMs: number, stallMs = Infinity): Promise<boolean> {
    if (this.reachedAt.size >= count) return Promise.resolve(true);
    const from = performance.now();
    this.lastReachedAt = Math.max(this.lastReachedAt, from);
    return new Promise((resolve) => {
      const giveUp = (): void => {
        clearInterval(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      };
      const timer = setInterval(() => {
        const now = performance.now();
        if (now - from > timeoutMs || now - this.lastReachedAt > stallMs) giveUp();
      }, Math.min(1000, timeoutMs));
      const waiter = {
        count,
        resolve: () => {
          clearInterval(timer);
          resolve(true);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Resolves true once this object reached the phase. */
  async waitFor(key: string, timeoutMs: number, pollMs = 50): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!this.reachedAt.has(key)) {
      if (performance.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    return true;
  }
}
