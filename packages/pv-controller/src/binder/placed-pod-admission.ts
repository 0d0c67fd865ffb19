import { podNodeSelectionMismatch, untoleratedTaint } from '@topovol/shared';
import type { Node, Pod } from '@topovol/shared';

/**
 * Why the kubelet would refuse a pod placed on this node with spec.nodeName, or undefined. Such a
 * pod skips the scheduler's filters, and the kubelet admits it only if the node's labels match its
 * nodeSelector and required node affinity and it tolerates the node's NoExecute taints (the
 * kubelet's admission check, pkg/kubelet/lifecycle/predicate.go: generalFilter, then the taint
 * check); otherwise the pod fails (reason NodeAffinity or TaintToleration). A claim must not get a
 * volume, or a selected node, for a pod that will never run there: the volume would be pinned to a
 * node its pods cannot use, and a tenant could take free volumes on nodes fenced off from it (by a
 * namespace node selector, NoExecute taints) by naming them in spec.nodeName. Left out, so never a
 * reason to refuse: resource fit and host ports (they change with what else runs on the node), the
 * OS checks, and tolerations with operators other than Exists and Equal (the Gt/Lt of the
 * TaintTolerationComparisonOperators gate). The kubelet checks once, at admission: a pod it has
 * taken (its container statuses written) is never refused here, whatever the node became.
 */
export function kubeletRefusesPlacedPod(pod: Pod, node: Node): string | undefined {
  if (admittedByKubelet(pod)) return undefined;
  const selection = podNodeSelectionMismatch(pod, node);
  if (selection) return selection;
  const name = node.metadata?.name ?? '';
  const judged = (pod.spec?.tolerations ?? []).every((t) => t.operator === undefined || t.operator === 'Exists' || t.operator === 'Equal');
  const taint = judged ? untoleratedTaint(pod, node, ['NoExecute']) : undefined;
  if (taint) return `node "${name}" has taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:NoExecute, which the pod does not tolerate`;
  return undefined;
}

/**
 * The kubelet took the pod: once it admits a pod it writes its container statuses (waiting,
 * ContainerCreating, while volumes are set up), before the pod can be Running.
 */
export function admittedByKubelet(pod: Pod): boolean {
  const st = pod.status;
  return (st?.containerStatuses?.length ?? 0) > 0 || (st?.initContainerStatuses?.length ?? 0) > 0;
}
