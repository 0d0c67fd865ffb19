import type { Node, Pod } from '@topovol/shared';

type Taint = NonNullable<NonNullable<Node['spec']>['taints']>[number];
type Toleration = NonNullable<NonNullable<Pod['spec']>['tolerations']>[number];

/** v1 toleration semantics (k8s.io/api/core/v1 toleration.go ToleratesTaint), in our words. */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === 'Exists') return true;
  return (t.operator === undefined || t.operator === 'Equal') && (t.value ?? '') === (taint.value ?? '');
}

/**
 * Why the pod can no longer be placed on this node, or undefined: the node is gone, cordoned, or
 * has a NoSchedule/NoExecute taint the pod does not tolerate.
 */
export function nodeRejectsPod(nodeName: string, node: Node | undefined, pod: Pod): string | undefined {
  if (!node) return `node ${nodeName} was deleted`;
  if (node.spec?.unschedulable) return `node ${nodeName} is cordoned`;
  const tolerations = pod.spec?.tolerations ?? [];
  const taint = (node.spec?.taints ?? []).find((x) => (x.effect === 'NoSchedule' || x.effect === 'NoExecute') && !tolerations.some((t) => tolerates(t, x)));
  if (taint) return `node ${nodeName} has taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} that the pod does not tolerate`;
  return undefined;
}
