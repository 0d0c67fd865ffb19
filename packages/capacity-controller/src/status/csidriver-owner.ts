import { isNotFound, Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient } from '@topovol/shared';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/**
 * The CSIDriver of the same name as the owner of every status object of a driver (so the garbage
 * collector deletes them with it), looked up at most once per `ttlMs`: a driver without a CSIDriver
 * object then costs no steady reads, however many shard objects lack the owner, and a CSIDriver
 * deleted and created again (a new uid) is noticed within ttlMs.
 */
export class CSIDriverOwner {
  private cached?: { atMs: number; ref: OwnerReference | undefined };

  constructor(
    private readonly client: KubeClient,
    readonly driverName: string,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * The reference, from the last lookup if it is recent enough and `fresh` is not asked for. An
   * object about to be created asks for a fresh one: with a CSIDriver deleted and created again, a
   * cached uid would make the garbage collector delete each object as soon as it is created.
   */
  async reference(fresh = false): Promise<OwnerReference | undefined> {
    if (!fresh && this.cached && this.now() - this.cached.atMs < this.ttlMs) return this.cached.ref;
    let ref: OwnerReference | undefined;
    try {
      const d = await this.client.get<CSIDriver>(Resources.csiDrivers, this.driverName);
      ref = { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name: this.driverName, uid: d.metadata!.uid! };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.cached = { atMs: this.now(), ref };
    return ref;
  }
}
