import { claimNamesOfPod } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
import { podUseOfClaim } from './usage-evidence.js';

interface Watched {
  uid: string;
  /** This process sent the claim's delete (or saw it go) after it began watching. */
  armed: boolean;
  /** Why a pod may have used the claim's volume since, or undefined while none can have. */
  doubt?: string;
}

/**
 * The pods of the claims this process is deleting for rollbacks, from before the last check until
 * the claim is gone: whether any pod naming the claim was scheduled or ran in that time, as the pod
 * watch delivers them (`note`; what it has not delivered yet is replayed from the server when the
 * volume is settled). Held volumes get `Delete` back only on a clean answer (held-volume.ts).
 *
 * In memory on purpose: a claim deleted before a restart (or a failover) has no entry, and its
 * volume stays `Retain`. A gap in the pod watch (`relisted`) taints every entry.
 */
export class DeletedClaimWatch {
  private readonly byClaim = new Map<string, Watched>();

  /** Before the last check of claim `name` (uid `uid`): pods are noted from now on. */
  begin(namespace: string, name: string, uid: string): void {
    const key = `${namespace}/${name}`;
    if (this.byClaim.get(key)?.uid !== uid) this.byClaim.set(key, { uid, armed: false });
  }

  /** Right before this process sends the claim's delete (a 404 to it then counts as gone after `begin`). */
  arm(namespace: string, name: string, uid: string): void {
    const w = this.byClaim.get(`${namespace}/${name}`);
    if (w?.uid === uid) w.armed = true;
  }

  /** A pod as the watch (or a read) delivers it; its last state counts for a deleted pod too. */
  note(p: Pod): void {
    if (this.byClaim.size === 0) return;
    for (const name of claimNamesOfPod(p)) {
      const w = this.byClaim.get(`${p.metadata?.namespace}/${name}`);
      if (!w || w.doubt) continue;
      const use = podUseOfClaim(p, name);
      if (use) w.doubt = `${use} while claim ${name} was being deleted`;
    }
  }

  /** The pod watch had a gap: a pod may have come and gone unseen. */
  relisted(): void {
    for (const w of this.byClaim.values()) w.doubt ??= 'the pod watch was relisted (a gap) while the claim was being deleted: a pod may have used it unseen';
  }

  /** Why a pod may have used the claim's volume since its delete; undefined when none can have. */
  doubt(namespace: string, name: string, uid: string): string | undefined {
    const w = this.byClaim.get(`${namespace}/${name}`);
    if (!w || w.uid !== uid) return `this process did not watch the pods of claim ${name} since its delete (it was sent before a restart or a failover)`;
    if (!w.armed) return `claim ${name} was deleted before this process watched its pods (a delete sent before a restart, or someone else's)`;
    return w.doubt;
  }

  /** What the watch has delivered since `begin` that may be a use of the claim (a gap counts), before the delete is sent. */
  seenUse(namespace: string, name: string, uid: string): string | undefined {
    const w = this.byClaim.get(`${namespace}/${name}`);
    return w?.uid === uid ? w.doubt : undefined;
  }

  end(namespace: string, name: string, uid: string): void {
    const key = `${namespace}/${name}`;
    if (this.byClaim.get(key)?.uid === uid) this.byClaim.delete(key);
  }

  get size(): number {
    return this.byClaim.size;
  }
}
