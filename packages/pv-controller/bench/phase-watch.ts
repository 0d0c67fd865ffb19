import { performance } from 'node:perf_hooks';
import { Informer, objectKey } from '@topovol/shared';
import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';

interface Phased extends KubeObject {
  status?: { phase?: string };
}

/** The bench needs only identity and phase; keeping the rest would grow our own heap with N. */
function slim(o: KubeObject): Phased {
  const p = o as Phased;
  return { metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion }, status: { phase: p.status?.phase } };
}

/**
 * One watch (the shared Informer) recording, per object, when a watch event first showed it in
 * a given phase, on the monotonic clock. Started before the objects exist, so no transition is missed.
 */
export class PhaseWatch {
  readonly reachedAt = new Map<string, number>();
  private readonly informer: Informer<Phased>;
  private waiters: { count: number; resolve: () => void }[] = [];

  constructor(
    client: KubeClient,
    resource: ResourceType,
    private readonly phase: string,
  ) {
    this.informer = new Informer<Phased>(client, resource, { transform: slim });
    const seen = (o: Phased): void => this.seen(o);
    this.informer.addEventHandler({ onAdd: seen, onUpdate: (_old, o) => seen(o) });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  private seen(o: Phased): void {
    if (o.status?.phase !== this.phase) return;
    const key = objectKey(o);
    if (this.reachedAt.has(key)) return;
    this.reachedAt.set(key, performance.now());
    if (this.waiters.length === 0) return;
    const n = this.reachedAt.size;
    this.waiters = this.waiters.filter((w) => {
      if (n < w.count) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves true once `count` objects reached the phase, false if the timeout passes first. */
  waitForCount(count: number, timeoutMs: number): Promise<boolean> {
    if (this.reachedAt.size >= count) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
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
