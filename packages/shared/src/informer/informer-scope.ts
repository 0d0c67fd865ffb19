import type { Informer, InformerOptions } from './informer.js';
import type { KubeObject } from './object-key.js';
import type { ResourceType } from './resources.js';

/** What a loop's setup uses to get its informers (the factory, or a scope recording them). */
export interface InformerSource {
  forResource<T extends KubeObject>(resource: ResourceType, opts?: InformerOptions<T>): Informer<T>;
}

/**
 * One loop's view of the shared factory: the informers stay shared, but the scope remembers which
 * ones this loop asked for, so the loop starts once *its* caches have synced and its readiness
 * names *its* missing resources. One informer that cannot sync (a CRD not installed, an RBAC rule
 * missing for another loop) then holds up only the loops that use it, as controller-runtime's
 * per-controller WaitForCacheSync does.
 */
export class InformerScope implements InformerSource {
  private readonly used = new Set<Informer<KubeObject>>();

  constructor(private readonly factory: InformerSource) {}

  forResource<T extends KubeObject>(resource: ResourceType, opts?: InformerOptions<T>): Informer<T> {
    const informer = this.factory.forResource<T>(resource, opts);
    this.used.add(informer as unknown as Informer<KubeObject>);
    return informer;
  }

  hasSynced(): boolean {
    return [...this.used].every((i) => i.hasSynced());
  }

  /** The resources of this scope not yet synced, e.g. `widgets.test.topovol.dev`. */
  unsynced(): string[] {
    return [...this.used].filter((i) => !i.hasSynced()).map((i) => i.label);
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.used].map((i) => i.waitForSync(signal)));
  }
}
