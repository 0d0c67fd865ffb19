import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import type { ProvisioningObservation, RollbackWorld } from './rollback-world.js';
import { workloadOf } from './workload.js';

/**
 * The evidence, seen by this process, that a volume being provisioned is for one particular pod:
 * the claim is not bound yet (so no pod can have used its volume), it has a selected node (the
 * scheduler chose provisioning), and exactly one live pod uses it, unscheduled. Recorded when seen
 * (the volume itself may already exist: the claim and volume watches deliver in any order), and
 * the only basis on which a volume is later marked unused. A process that did not see it (it
 * started later, or was not leading, or first saw the claim bound) never marks the volume unused.
 * The caller looks only at claims listed after the pods (Informer.listedAfter): a claim state older
 * than the pods' list could hide a pod that used the volume and went before that list. A pod that
 * goes later is seen going, and its use is kept whatever was observed (EndedUse).
 */
export function observeProvisioning(claim: PersistentVolumeClaim, world: RollbackWorld): ProvisioningObservation | undefined {
  const ns = claim.metadata?.namespace ?? '';
  const name = claim.metadata?.name ?? '';
  const node = claim.metadata?.annotations?.[ANN_SELECTED_NODE];
  if (!node || claim.spec?.volumeName || claim.metadata?.deletionTimestamp) return undefined;
  const pods = world.podsUsingClaim(ns, name);
  if (pods.length !== 1) return undefined;
  const pod = pods[0]!;
  if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp || !pod.metadata?.uid) return undefined;
  return { node, podUid: pod.metadata.uid, workloadUid: workloadOf(pod).uid };
}
