import { ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { usageOf } from './marks.js';
import type { RollbackWorld } from './rollback-world.js';
import { unusedMarkDoubt, usedEvidence } from './usage-evidence.js';

export type MarkDecision =
  | { kind: 'none' }
  | { kind: 'markUnused'; volume: PersistentVolume; node: string; podUid: string; workloadUid: string; podName: string }
  /** `node`: for a volume provisioned for a node, so that a stuck pod's refusal can name it. */
  | { kind: 'markUsed'; volume: PersistentVolume; because: string; node?: string };

/**
 * Why a freshly provisioned volume cannot be shown to be for the one pod waiting for it, or
 * undefined when it can: this process saw its claim Pending with that selected node while that pod,
 * unscheduled and the claim's only user, was waiting (observeProvisioning), and the pod existed
 * before the volume was created.
 */
function doubt(v: PersistentVolume, world: RollbackWorld, claimUid: string, node: string): { why: string } | { podUid: string; workloadUid: string; podName: string } {
  const seen = world.provisioningObserved(claimUid);
  if (!seen) return { why: 'the rollback controller did not see it being provisioned' };
  if (seen.node !== node) return { why: `it was seen provisioning for node ${seen.node}, and the claim now selects ${node}` };
  const ref = v.spec!.claimRef!;
  const pods = world.podsUsingClaim(ref.namespace ?? '', ref.name ?? '');
  const scheduled = pods.find((p) => p.spec?.nodeName);
  if (scheduled) return { why: `pod ${scheduled.metadata?.name} using its claim is already scheduled` };
  if (pods.length !== 1 || pods[0]!.metadata?.uid !== seen.podUid) return { why: 'the pods using its claim are not (only) the one it was provisioned for' };
  const pod = pods[0]!;
  const podCreated = Date.parse(pod.metadata?.creationTimestamp ?? '');
  const volumeCreated = Date.parse(v.metadata?.creationTimestamp ?? '');
  if (!(podCreated <= volumeCreated)) return { why: `pod ${pod.metadata?.name} was created after the volume` };
  return { podUid: seen.podUid, workloadUid: seen.workloadUid, podName: `${pod.metadata?.namespace}/${pod.metadata?.name}` };
}

/**
 * The marks of one volume. `used` is permanent and set on any evidence of use. A volume freshly
 * provisioned by an external provisioner for a claim with a selected node (within the mark window)
 * is marked `unused` only when it can be shown to be for the pod waiting for it (see doubt);
 * otherwise it is marked `used` at once: when in doubt, never roll back. Other volumes are never
 * marked.
 */
export function decideMark(v: PersistentVolume, world: RollbackWorld): MarkDecision {
  const usage = usageOf(v);
  if (usage === 'used' || v.metadata?.deletionTimestamp) return { kind: 'none' };
  if (usage === 'unused') {
    const evidence = unusedMarkDoubt(v, world);
    return evidence ? { kind: 'markUsed', volume: v, because: evidence } : { kind: 'none' };
  }
  // The cheap checks first: the evidence walks every node's volumesInUse, and most volumes are
  // never candidates (static, old, Released), while claim updates anyone may make re-check them.
  if (!v.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED]) return { kind: 'none' };
  if (v.status?.phase === 'Released' || v.status?.phase === 'Failed') return { kind: 'none' };
  const created = Date.parse(v.metadata?.creationTimestamp ?? '');
  if (Number.isNaN(created) || world.now() - created > world.markWindowMs) return { kind: 'none' };
  const ref = v.spec?.claimRef;
  if (!ref?.name || !ref.namespace || !ref.uid) return { kind: 'none' };
  const claim = world.claim(ref.namespace, ref.name);
  if (!claim || claim.metadata?.uid !== ref.uid) return { kind: 'none' };
  const node = claim.metadata?.annotations?.[ANN_SELECTED_NODE];
  if (!node) return { kind: 'none' };
  const evidence = usedEvidence(v, world);
  if (evidence) return { kind: 'markUsed', volume: v, because: evidence, node };
  // Not seen yet, but the cached claim is not bound either: the claim or pod watch lags behind the
  // volume's (they deliver in any order). Undecided, and looked at again on the claim's or pod's
  // next event; once the cache shows the claim bound, not seen means not seen.
  if (!world.provisioningObserved(ref.uid) && !claim.spec?.volumeName) return { kind: 'none' };
  // A candidate: from here on it is marked one way or the other.
  const d = doubt(v, world, ref.uid, node);
  if ('why' in d) return { kind: 'markUsed', volume: v, because: `not provably unused: ${d.why}`, node };
  return { kind: 'markUnused', volume: v, node, ...d };
}
