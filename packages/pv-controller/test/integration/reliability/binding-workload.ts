import { isAlreadyExists, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { bindingViolations, createTestNamespace, eventually } from '@topovol/testing';
import { deleteNow, pv, pvc } from '../binder-harness.js';

/**
 * The load every reliability scenario puts on the binder: pairs of a static PV and a claim of one
 * class (Immediate binding, so only Topovol's binder acts), created in bursts while a fault happens,
 * and a foreign writer that keeps changing the same objects (a conflict storm). It counts what it
 * attempted and checks the binding invariants (packages/testing/src/binding-invariants.ts).
 */
export class BindingWorkload {
  /** API writes the workload attempted (creates and foreign patches). */
  operations = 0;
  private next = 0;
  private retired = 0;

  private constructor(
    readonly admin: KubeClient,
    readonly ns: string,
    readonly cls: string,
  ) {}

  static async create(admin: KubeClient, prefix: string): Promise<BindingWorkload> {
    const ns = await createTestNamespace(admin, prefix);
    const cls = `${ns}-c`;
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate' } as never);
    return new BindingWorkload(admin, ns, cls);
  }

  /**
   * Creates `count` PV + claim pairs, `concurrency` at a time. Writes refused while the API server
   * or etcd is down are retried until they land (a client's create is not lost, only delayed), so
   * the expected number of Bound claims is exact.
   */
  async pairs(count: number, concurrency = 8): Promise<void> {
    const ids = [...Array(count).keys()].map(() => this.next++);
    const worker = async (): Promise<void> => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
        await this.retrying(() => this.admin.create(Resources.persistentVolumes, pv(`${this.ns}-pv-${id}`, '1Gi', { class: this.cls })));
        await this.retrying(() => this.admin.create(Resources.persistentVolumeClaims, pvc(this.ns, `c-${id}`, '1Gi', { class: this.cls })));
      }
    };
    await Promise.all([...Array(concurrency).keys()].map(worker));
  }

  /**
   * Creates `count` volumes, then their claims all at once: many claims wait at the same time for the
   * same free volumes, so that two binders pick the same volume for different claims.
   */
  async volumesThenClaims(count: number, concurrency = 16): Promise<void> {
    const ids = [...Array(count).keys()].map(() => this.next++);
    const all = async (write: (id: number) => Promise<unknown>): Promise<void> => {
      const queue = [...ids];
      const worker = async (): Promise<void> => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) await this.retrying(() => write(id));
      };
      await Promise.all([...Array(concurrency).keys()].map(worker));
    };
    await all((id) => this.admin.create(Resources.persistentVolumes, pv(`${this.ns}-pv-${id}`, '1Gi', { class: this.cls })));
    await all((id) => this.admin.create(Resources.persistentVolumeClaims, pvc(this.ns, `c-${id}`, '1Gi', { class: this.cls })));
  }

  /** How many pairs were created so far. */
  get created(): number {
    return this.next;
  }

  /** Pairs created and not retired. */
  get live(): number {
    return this.next - this.retired;
  }

  /** Deletes the oldest pairs until at most `keep` remain (claim first, then its volume). */
  async retireAllBut(keep: number): Promise<void> {
    while (this.next - this.retired > keep) {
      const id = this.retired++;
      this.operations += 2;
      await deleteNow(this.admin, Resources.persistentVolumeClaims, `c-${id}`, this.ns).catch(() => undefined);
      await deleteNow(this.admin, Resources.persistentVolumes, `${this.ns}-pv-${id}`).catch(() => undefined);
    }
  }

  /** A foreign writer annotating every claim and volume of the workload, `rounds` times. */
  async storm(rounds: number): Promise<void> {
    for (let round = 0; round < rounds; round++) {
      const annotate = { metadata: { annotations: { 'chaos.topovol.test/round': String(round) } } };
      for (const c of await this.claims().catch(() => [])) {
        this.operations++;
        await this.admin.patch(Resources.persistentVolumeClaims, c.metadata!.name!, this.ns, 'merge', annotate).catch(() => undefined);
      }
      for (const v of await this.volumes().catch(() => [])) {
        this.operations++;
        await this.admin.patch(Resources.persistentVolumes, v.metadata!.name!, undefined, 'merge', annotate).catch(() => undefined);
      }
    }
  }

  async claims(): Promise<PersistentVolumeClaim[]> {
    return (await this.admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: this.ns })).items;
  }

  async volumes(): Promise<PersistentVolume[]> {
    return (await this.admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.metadata!.name!.startsWith(`${this.ns}-`));
  }

  /** Claim key to volume name of every Bound claim: what no fault may take away. */
  async bound(): Promise<Map<string, string>> {
    return new Map((await this.claims()).filter((c) => c.status?.phase === 'Bound').map((c) => [`${this.ns}/${c.metadata!.name}`, c.spec!.volumeName!]));
  }

  /** Waits until every claim created and not retired is Bound; returns the seconds it took. */
  async untilAllBound(timeoutMs: number): Promise<number> {
    const started = Date.now();
    await eventually(async () => {
      const claims = await this.claims();
      const bound = claims.filter((c) => c.status?.phase === 'Bound').length;
      if (bound !== this.live || claims.length !== this.live) throw new Error(`${bound} of ${this.live} claims Bound (${claims.length} listed)`);
    }, timeoutMs, 250);
    return (Date.now() - started) / 1000;
  }

  /**
   * Waits for every claim to be Bound, then checks the invariants; they are checked even when the
   * claims never all bind (a wrong binding often shows as a claim that cannot bind), so the report
   * names the violation, not only the timeout.
   */
  async settle(boundBefore: ReadonlyMap<string, string>, timeoutMs: number): Promise<{ violations: string[]; allBound: string | true }> {
    const allBound = await this.untilAllBound(timeoutMs).then(
      () => true as const,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    return { violations: await this.violations(boundBefore), allBound };
  }

  /** The binding invariants, one line per violation. */
  async violations(boundBefore: ReadonlyMap<string, string>): Promise<string[]> {
    const volumes = await this.volumes();
    // Every volume is Retain: nothing but the workload may delete one.
    const names = new Set(volumes.map((v) => v.metadata?.name));
    const gone = [...Array(this.next - this.retired).keys()].map((i) => `${this.ns}-pv-${this.retired + i}`).filter((n) => !names.has(n));
    return [...gone.map((n) => `volume ${n} was deleted`), ...bindingViolations(await this.claims(), volumes, boundBefore)];
  }

  async cleanup(): Promise<void> {
    for (const c of await this.claims().catch(() => [])) await deleteNow(this.admin, Resources.persistentVolumeClaims, c.metadata!.name!, this.ns).catch(() => undefined);
    for (const v of await this.volumes().catch(() => [])) await deleteNow(this.admin, Resources.persistentVolumes, v.metadata!.name!).catch(() => undefined);
    await this.admin.delete(Resources.storageClasses, this.cls).catch(() => undefined);
  }

  private async retrying(write: () => Promise<unknown>): Promise<void> {
    for (;;) {
      this.operations++;
      try {
        await write();
        return;
      } catch (err) {
        // Created by an earlier attempt whose answer was lost.
        if (isAlreadyExists(err)) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}
