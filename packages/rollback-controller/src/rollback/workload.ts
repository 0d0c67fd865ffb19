import type { Pod } from '@topovol/shared';
import type { ObjectRef } from './intent/provisioning-rollback.js';

/**
 * The workload a pod belongs to: its controller (the owner reference with controller=true, e.g. a
 * ReplicaSet or StatefulSet), or the pod itself when nothing controls it. A pod re-created by its
 * controller has a new uid but the same workload.
 */
export function workloadOf(p: Pod): ObjectRef {
  const owner = p.metadata?.ownerReferences?.find((o) => o.controller);
  if (owner?.uid) return { kind: owner.kind, name: owner.name, uid: owner.uid };
  return { kind: 'Pod', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' };
}
