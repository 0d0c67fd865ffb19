import type { Pod } from '@topovol/shared';
import { claimTemplate } from '../claim-template.js';
import type { PinnedClaim } from '../decide-rollback.js';
import { historyKeyOfPod, rollbackName, workloadOf } from '../workload.js';
import { ProvisioningRollbacks } from './provisioning-rollback.js';
import type { ProvisioningRollback } from './provisioning-rollback.js';

/** The record of a rollback, written before anything is deleted: the claims and their templates, from the claims as decided on. */
export function newRollback(pod: Pod, pinned: PinnedClaim[], why: string, attempt: number, evidenceTime: number): ProvisioningRollback {
  const workload = workloadOf(pod);
  return {
    apiVersion: `${ProvisioningRollbacks.group}/${ProvisioningRollbacks.version}`,
    kind: ProvisioningRollbacks.kind,
    metadata: { name: rollbackName(historyKeyOfPod(pod), attempt), labels: { 'rollback.topovol.io/workload-uid': workload.uid, 'rollback.topovol.io/pod-uid': pod.metadata?.uid ?? '' } },
    spec: {
      pod: { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
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
