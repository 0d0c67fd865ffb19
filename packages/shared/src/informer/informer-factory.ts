import type { KubeClient } from '../client/kube-client.js';
import { Informer } from './informer.js';
import type { InformerOptions } from './informer.js';
import type { KubeObject } from './object-key.js';
import type { ResourceType } from './resources.js';

/**
 * One shared informer per resource (and namespace/selector), so several loops in one process
 * share a single list+watch and a single cache, as client-go's SharedInformerFactory.
 */
export class InformerFactory {
  private readonly informers = new Map<string, { informer: Informer<KubeObject>; transform?: unknown }>();
  private started = false;

  constructor(private readonly client: KubeClient) {}

  /**
   * The shared informer for a resource. A transform is part of the contract: asking for the same
   * resource with a different transform, or with one and without one, is a programming error caught
   * at start-up; otherwise whichever loop asked first would decide what the others see. Loops use
   * the shared projections (projections.ts).
   */
  forResource<T extends KubeObject>(resource: ResourceType, opts: InformerOptions<T> = {}): Informer<T> {
    const id = [resource.group, resource.version, resource.plural, opts.namespace ?? '', opts.labelSelector ?? '', opts.fieldSelector ?? ''].join('|');
    const existing = this.informers.get(id);
    if (existing) {
      if (existing.transform !== opts.transform) {
        throw new Error(`informer for ${resource.plural}: conflicting transforms requested (use the shared projection, or none)`);
      }
      return existing.informer as unknown as Informer<T>;
    }
    const informer = new Informer<T>(this.client, resource, opts);
    this.informers.set(id, { informer: informer as unknown as Informer<KubeObject>, transform: opts.transform });
    if (this.started) informer.start();
    return informer;
  }

  start(): void {
    this.started = true;
    for (const { informer } of this.informers.values()) informer.start();
  }

  hasSynced(): boolean {
    return [...this.informers.values()].every(({ informer }) => informer.hasSynced());
  }

  /** Names of informers not yet synced (for /readyz output). */
  unsynced(): string[] {
    return [...this.informers.values()].filter(({ informer }) => !informer.hasSynced()).map(({ informer }) => informer.resource.plural);
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map(({ informer }) => informer.waitForSync(signal)));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map(({ informer }) => informer.stop()));
  }
}
