import { labelValueProblem } from '@topovol/shared';
import type { Pod } from '@topovol/shared';
import { claimTemplate } from '../claim-template.js';
import type { PinnedClaim } from '../decide-rollback.js';
import { historyKeyOfPod, rollbackName, workloadOf } from '../workload.js';
import { ProvisioningRollbacks } from './provisioning-rollback.js';
import type { ProvisioningRollback } from './provisioning-rollback.js';

/** The record of a rollback, written before anything is deleted: the claims and their templates, from the claims as decided on. */
export function newRollback(pod: Pod, pinned: PinnedClaim[], why: string, attempt: number, evidenceTime: number, namespaceUID?: string): ProvisioningRollback {
  const workload = workloadOf(pod);
  // A label for `kubectl get -l`. The workload's uid comes from the pod's ownerReference, which
  // whoever creates the pod writes and the API server checks only for being non-empty: a value no
  // label may hold would fail the record's create at every retry, so it is left off (spec.workload
  // has it).
  const labels: Record<string, string> = { 'rollback.topovol.io/pod-uid': pod.metadata?.uid ?? '' };
  if (labelValueProblem(workload.uid) === undefined) labels['rollback.topovol.io/workload-uid'] = workload.uid;
  return {
    apiVersion: `${ProvisioningRollbacks.group}/${ProvisioningRollbacks.version}`,
    kind: ProvisioningRollbacks.kind,
    metadata: { name: rollbackName(historyKeyOfPod(pod), attempt), labels },
    spec: {
      pod: { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '', ...(namespaceUID ? { namespaceUID } : {}) },
      workload,
      node: pinned[0]!.node,
      reason: why,
      attempt,
      evidenceTime: new Date(evidenceTime).toISOString(),
      claims: pinned.map((p) => ({
        name: p.claim.metadata?.name ?? '',
        uid: p.claim.metadata?.uid ?? '',
        resourceVersion: p.claim.metadata?.resourceVersion ?? '',
        volume: p.volume.metadata?.name ?? '',
        reclaimPolicy: p.volume.spec?.persistentVolumeReclaimPolicy,
        template: claimTemplate(p.claim),
      })),
    },
  };
}

/**
 * The most the claims' templates may take in a record, as JSON. A record is one object in etcd
 * (1.5 MiB at most, by default), and a claim's labels are bounded only by that: a tenant's claims
 * copied whole could make a record that cannot be created, or whose status writes fail once it is
 * (kube-apiserver answers 500 for an object etcd refuses, retried for ever), its claims perhaps
 * deleted by then. Far above what real claims carry; each record stays a small share of etcd's limit.
 */
export const RECORD_TEMPLATES_BUDGET_BYTES = 256 * 1024;

/** Why the pinned claims cannot be recorded (their templates are too large), or undefined. */
export function templatesTooLarge(pinned: readonly PinnedClaim[]): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(pinned.map((p) => claimTemplate(p.claim))));
  if (bytes <= RECORD_TEMPLATES_BUDGET_BYTES) return undefined;
  return `the claims' labels, annotations and spec take ${bytes} bytes, more than the ${RECORD_TEMPLATES_BUDGET_BYTES} a ProvisioningRollback keeps to re-create them from`;
}
