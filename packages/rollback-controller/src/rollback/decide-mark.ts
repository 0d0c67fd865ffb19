import type { PersistentVolume } from '@topovol/shared';
import { ANN_PROVISIONED_BY, ANN_SELECTED_NODE, usageOf } from './marks.js';
import type { RollbackWorld } from './rollback-world.js';
import { usedEvidence } from './usage-evidence.js';

export type MarkDecision =
  | { kind: 'none' }
  | { kind: 'markUnused'; volume: PersistentVolume; node: string; podUid: string; podName: string }
  | { kind: 'markUsed'; volume: PersistentVolume; because: string };

/**
 * The marks of one volume. `used` is permanent and set on any evidence. `unused` is set only when
 * the controller sees a volume just provisioned (by an external provisioner, within the mark
 * window) for a claim with a selected node, whose pods were never bound to a node and of which
 * exactly one is waiting: the pod whose scheduling asked for it. Volumes without our marks are
 * never changed otherwise.
 */
export function decideMark(v: PersistentVolume, world: RollbackWorld): MarkDecision {
  const usage = usageOf(v);
  if (usage === 'used' || v.metadata?.deletionTimestamp) return { kind: 'none' };
  const evidence = usedEvidence(v, world);
  if (usage === 'unused') return evidence ? { kind: 'markUsed', volume: v, because: evidence } : { kind: 'none' };
  if (evidence) return { kind: 'none' };
  if (!v.metadata?.annotations?.[ANN_PROVISIONED_BY]) return { kind: 'none' };
  if (v.status?.phase === 'Released' || v.status?.phase === 'Failed') return { kind: 'none' };
  const created = Date.parse(v.metadata?.creationTimestamp ?? '');
  if (Number.isNaN(created) || world.now() - created > world.markWindowMs) return { kind: 'none' };
  const ref = v.spec?.claimRef;
  if (!ref?.name || !ref.namespace) return { kind: 'none' };
  const claim = world.claim(ref.namespace, ref.name);
  if (!claim || (ref.uid && claim.metadata?.uid !== ref.uid)) return { kind: 'none' };
  const node = claim.metadata?.annotations?.[ANN_SELECTED_NODE];
  if (!node) return { kind: 'none' };
  const pods = world.podsUsingClaim(ref.namespace, ref.name);
  if (pods.some((p) => p.spec?.nodeName)) return { kind: 'none' };
  const waiting = pods.filter((p) => !p.metadata?.deletionTimestamp);
  if (waiting.length !== 1 || pods.length !== 1) return { kind: 'none' };
  const trigger = waiting[0]!;
  return { kind: 'markUnused', volume: v, node, podUid: trigger.metadata?.uid ?? '', podName: `${trigger.metadata?.namespace}/${trigger.metadata?.name}` };
}
