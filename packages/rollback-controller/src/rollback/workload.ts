import { createHash } from 'node:crypto';
import type { Pod } from '@topovol/shared';
import type { ObjectRef, ProvisioningRollback } from './intent/provisioning-rollback.js';

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

/**
 * Whose rollbacks count together for the cap, the backoff and "newer evidence": the workload in the
 * pod's namespace, and for a StatefulSet the replica (its pods keep their name, and each has its own
 * claims). The namespace is part of it because owner references are namespace-local: a pod can name
 * any uid as its controller, but only ever shares a history with its own namespace.
 */
export function historyKey(namespace: string, workload: ObjectRef, podName: string): string {
  // An encoding no part can forge: the API server does not check an owner reference's uid, so a
  // pod naming "<uid>/web-0" as its controller would, joined with "/", share replica web-0's history
  // (its cap and backoff, even its record names).
  return JSON.stringify([namespace, workload.uid, workload.kind === 'StatefulSet' ? podName : '']);
}

export const historyKeyOfPod = (p: Pod): string => historyKey(p.metadata?.namespace ?? '', workloadOf(p), p.metadata?.name ?? '');

export const historyKeyOfRecord = (r: ProvisioningRollback): string => historyKey(r.spec.pod.namespace, r.spec.workload, r.spec.pod.name);

/**
 * The record's name: the same for every worker or leader deciding the same attempt (the create is
 * the lock), distinct across histories.
 */
export const rollbackName = (key: string, attempt: number): string => `rb-${createHash('sha256').update(key).digest('hex').slice(0, 24)}-${attempt}`;
