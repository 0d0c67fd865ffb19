import type { PersistentVolume } from '@topovol/shared';
import { AssumeCache } from './assume-cache.js';
import type { BinderWorld } from './binder-world.js';
import { VolumeIndex } from './volume-index.js';

export type VolumeView = Pick<BinderWorld, 'volume' | 'preBoundVolumes' | 'accessModeGroups' | 'freeVolumes'>;

/**
 * The binder's volumes: the informer's objects overlaid with our own writes (the assume cache), and
 * the index that finds candidates, kept on the newest of the two. The index follows our writes as
 * they are answered, as upstream's binder stores each write in the cache its search reads
 * (pv_controller.go, storeVolumeUpdate): otherwise a claim whose own write failed after its volume's
 * `claimRef` was written, retried before the informer delivers that volume, would not find it
 * pre-bound, would pass it by as taken, and would take a second volume, leaving the first bound to
 * a claim that is bound elsewhere (and, provisioned with `Delete`, released and deleted).
 */
export class BinderVolumes {
  readonly index = new VolumeIndex();
  readonly assumed: AssumeCache<PersistentVolume>;
  readonly view: VolumeView;

  constructor(
    /** The informer's copy. */
    private readonly cached: (name: string) => PersistentVolume | undefined,
    /** Volumes a worker has decided to bind and is writing now: never offered to another claim. */
    inFlight: ReadonlySet<string>,
  ) {
    this.assumed = new AssumeCache<PersistentVolume>({
      // A write's answer for a volume the informer no longer has is a deleted volume: not indexed.
      onAssume: (v) => {
        if (this.cached(v.metadata?.name ?? '')) this.index.upsertVolume(v);
      },
      // Our write dropped (found stale): the index follows the informer's copy again, as the view does.
      onForget: (name) => {
        const v = this.cached(name);
        if (v) this.index.upsertVolume(v);
        else this.index.deleteVolume(name);
      },
    });
    const index = this.index;
    const newest = (name: string): PersistentVolume | undefined => this.assumed.get(name, this.cached(name));
    this.view = {
      volume: newest,
      preBoundVolumes: (ns, name) => index.preBoundTo(ns, name).flatMap((n) => newest(n) ?? []),
      accessModeGroups: (cls) => index.accessModeGroups(cls),
      *freeVolumes(cls, group, minBytes, nodeName) {
        for (const n of nodeName === undefined ? index.freeVolumes(cls, group, minBytes) : index.freeVolumesForNode(cls, group, nodeName, minBytes)) {
          if (inFlight.has(n)) continue;
          const v = newest(n);
          if (v) yield v;
        }
      },
    };
  }

  /** An informer add or update: indexed as the newest we know (an older event must not undo our write). */
  observed(v: PersistentVolume): void {
    const name = v.metadata?.name ?? '';
    this.index.upsertVolume(this.assumed.get(name, v) ?? v);
  }

  /** An informer delete. */
  deleted(name: string): void {
    this.assumed.forget(name);
    this.index.deleteVolume(name);
  }
}
