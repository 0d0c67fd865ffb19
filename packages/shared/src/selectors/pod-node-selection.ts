import type { Node, Pod } from '../types/wire.js';
import { nodeSelectorMatches } from './node-selector.js';

/**
 * Why the pod's own node selection (its nodeSelector, then its required node affinity) rules this
 * node out, or undefined: what kube-scheduler's NodeAffinity filter and the kubelet's admission
 * (pkg/kubelet/lifecycle/predicate.go, generalFilter) both check from the node's labels.
 */
export function podNodeSelectionMismatch(pod: Pod, node: Node): string | undefined {
  const labels = node.metadata?.labels ?? {};
  const name = node.metadata?.name ?? '';
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (labels[k] !== v) return `node "${name}" does not match the pod's nodeSelector (${k}=${v})`;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required && !nodeSelectorMatches(required, node)) return `node "${name}" does not match the pod's required node affinity`;
  return undefined;
}
