import { claimKeysOfPod, isPodTerminated } from '@topovol/shared';
import type { Node, Pod } from '@topovol/shared';
import { admittedByKubelet } from './placed-pod-admission.js';

/**
 * What a claim's decision reads of a pod that uses it (wait-for-consumer.ts, node-name-consumer.ts,
 * placed-pod-admission.ts, selected-node-checks.ts, reclaim-volume.ts): who it is, the claims it
 * uses, where it was placed, whether it is live, and for a hand-placed pod its tolerations and
 * whether the kubelet took it. The rest of the cached pod (its PodScheduled condition, its
 * containers' restarts) is there for other loops.
 */
function consumerView(p: Pod): string {
  const md = p.metadata;
  // A hand-placed pod: whether the kubelet will refuse it (placed-pod-admission.ts) reads its
  // tolerations, which can be added to a pod, and whether the kubelet took it already.
  const placed = p.spec?.nodeName ? [p.spec.tolerations, admittedByKubelet(p)] : undefined;
  return JSON.stringify([md?.namespace, md?.name, md?.uid, p.spec?.nodeName, claimKeysOfPod(p), isPodTerminated(p), Boolean(md?.deletionTimestamp), placed]);
}

/**
 * Whether a pod update may change the decision of a claim it uses, and so queue the claim again.
 * kube-scheduler writes a pending pod's status (its PodScheduled condition) while the pod waits
 * for a delayed-binding claim; each such write queued the claim, which decided to wait again and
 * recorded its WaitForPodScheduled Event again (a PATCH of the Event's count), about one extra
 * decision and one extra write per pod in a scheduling burst (hack/bench/README.md, "Events
 * while pods wait"). Upstream's binder does not watch pods for this at all: it says which pods a
 * claim waits for only when it syncs the claim (emitEventForUnboundDelayBindingClaim in
 * pkg/controller/volume/persistentvolume/pv_controller.go).
 */
export function consumerChanged(old: Pod, next: Pod): boolean {
  return consumerView(old) !== consumerView(next);
}

/**
 * Whether a node update may change the decision of a claim waiting on it: its labels (volume
 * affinity, allowedTopologies, a placed pod's node selectors) or its taints (whether the kubelet
 * admits a placed pod, placed-pod-admission.ts).
 */
export function nodeChanged(old: Node, next: Node): boolean {
  return JSON.stringify([old.metadata?.labels ?? {}, old.spec?.taints ?? []]) !== JSON.stringify([next.metadata?.labels ?? {}, next.spec?.taints ?? []]);
}
