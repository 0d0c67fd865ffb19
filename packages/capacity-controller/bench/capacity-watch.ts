import { Informer, parseQuantity, Resources } from '@topovol/shared';
import type { CSIStorageCapacity, KubeClient } from '@topovol/shared';
import { TOPOLOGY_KEY } from './bench-objects.js';

/** One CSIStorageCapacity object's figure for a segment and class, as this watch sees it. */
export interface Wanted {
  /** The segment's value of the watch's topology key: a node (per-node runs) or a zone. */
  node: string;
  cls: string;
  /** null: no object for the pair (the segment is gone). */
  bytes: number | null;
}

interface Pending {
  wanted: Wanted[];
  resolve: (at: number) => void;
}

const key = (node: string, cls: string): string => `${node}\u0000${cls}`;

/**
 * The bench's own watch of the CSIStorageCapacity objects (as the scheduler's informer sees
 * them): what each (segment, class) object says now, and the first moment a set of objects all
 * say what a change should make them say. Objects of either contender look alike: a single-key
 * nodeTopology on the driver's topology key (the node's by default), and the class.
 */
export class CapacityWatch {
  private readonly informer: Informer<CSIStorageCapacity>;
  private readonly pending = new Set<Pending>();

  constructor(
    client: KubeClient,
    namespace: string,
    private readonly topologyKey: string = TOPOLOGY_KEY,
  ) {
    this.informer = new Informer<CSIStorageCapacity>(client, Resources.csiStorageCapacities, { namespace });
    const changed = (): void => this.check(Date.now());
    this.informer.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** Figures by (node, class); a pair with several objects (a duplicate) has none, so it never matches. */
  figures(): Map<string, number | undefined> {
    const out = new Map<string, number | undefined>();
    for (const o of this.informer.cache.list()) {
      const node = o.nodeTopology?.matchLabels?.[this.topologyKey];
      if (!node || !o.storageClassName || o.metadata?.deletionTimestamp) continue;
      const k = key(node, o.storageClassName);
      out.set(k, out.has(k) || o.capacity === undefined ? undefined : parseQuantity(String(o.capacity)));
    }
    return out;
  }

  objectCount(): number {
    return this.informer.cache.list().length;
  }

  private satisfied(wanted: readonly Wanted[], figures: Map<string, number | undefined>): boolean {
    return wanted.every((w) => (w.bytes === null ? !figures.has(key(w.node, w.cls)) : figures.get(key(w.node, w.cls)) === w.bytes));
  }

  private check(at: number): void {
    if (this.pending.size === 0) return;
    const figures = this.figures();
    for (const p of this.pending) {
      if (!this.satisfied(p.wanted, figures)) continue;
      this.pending.delete(p);
      p.resolve(at);
    }
  }

  /**
   * Resolves with the Date.now() of the watch event after which every wanted figure is there (at
   * once, if they already are), or undefined after timeoutMs.
   */
  until(wanted: Wanted[], timeoutMs: number): Promise<number | undefined> {
    if (this.satisfied(wanted, this.figures())) return Promise.resolve(Date.now());
    return new Promise((resolve) => {
      const p: Pending = {
        wanted,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
      const timer = setTimeout(() => {
        this.pending.delete(p);
        resolve(undefined);
      }, timeoutMs);
      this.pending.add(p);
    });
  }
}
