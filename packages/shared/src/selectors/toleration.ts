import type { Node, Pod } from '../types/wire.js';

export type Taint = NonNullable<NonNullable<Node['spec']>['taints']>[number];
export type Toleration = NonNullable<NonNullable<Pod['spec']>['tolerations']>[number];

/** v1 toleration semantics (k8s.io/api/core/v1 toleration.go ToleratesTaint), in our words. */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === 'Exists') return true;
  return (t.operator === undefined || t.operator === 'Equal') && (t.value ?? '') === (taint.value ?? '');
}

/** The first of the node's taints with one of `effects` that none of the pod's tolerations tolerates. */
export function untoleratedTaint(pod: Pod, node: Node, effects: readonly string[]): Taint | undefined {
  const tolerations = pod.spec?.tolerations ?? [];
  return (node.spec?.taints ?? []).find((x) => effects.includes(x.effect) && !tolerations.some((t) => tolerates(t, x)));
}
