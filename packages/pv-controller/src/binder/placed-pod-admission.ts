import { nodeSelectorMatches, untoleratedTaint } from '@topovol/shared';
import type { Node, Pod } from '@topovol/shared';

/**
 * Why the kubelet would refuse a pod placed on this node with spec.nodeName, or undefined. Such a
 * pod skips the scheduler's filters, and the kubelet admits it only if the node's labels match its
 * nodeSelector and required node affinity and it tolerates the node's NoExecute taints (the
 * kubelet's admission check, pkg/kubelet/lifecycle/predicate.go: generalFilter, then the taint
 * check); otherwise the pod fails (reason NodeAffinity or Taint). A claim must not get a volume, or
 * a selected node, for a pod that will never run there: the volume would be pinned to a node its
 * pods cannot use, and a tenant could take free volumes on nodes fenced off from it by naming them
 * in spec.nodeName. Resource fit and host ports are left out: they change with what else runs on
 * the node, and a pod refused for them is retried by its controller on the same node.
 */
export function kubeletRefusesPlacedPod(pod: Pod, node: Node): string | undefined {
  const labels = node.metadata?.labels ?? {};
  const name = node.metadata?.name ?? '';
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (labels[k] !== v) return `node "${name}" does not match the pod's nodeSelector (${k}=${v})`;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required && !nodeSelectorMatches(required, node)) return `node "${name}" does not match the pod's required node affinity`;
  const taint = untoleratedTaint(pod, node, ['NoExecute']);
  if (taint) return `node "${name}" has taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:NoExecute, which the pod does not tolerate`;
  return undefined;
}
