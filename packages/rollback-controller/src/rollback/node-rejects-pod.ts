import { isDeepStrictEqual } from 'node:util';
import { untoleratedTaint } from '@topovol/shared';
import type { Node, Pod } from '@topovol/shared';

/**
 * Why the pod can no longer be placed on this node, or undefined: the node is gone, cordoned, or
 * has a NoSchedule/NoExecute taint the pod does not tolerate.
 */
export function nodeRejectsPod(nodeName: string, node: Node | undefined, pod: Pod): string | undefined {
  if (!node) return `node ${nodeName} was deleted`;
  if (node.spec?.unschedulable) return `node ${nodeName} is cordoned`;
  const taint = untoleratedTaint(pod, node, ['NoSchedule', 'NoExecute']);
  if (taint) return `node ${nodeName} has taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} that the pod does not tolerate`;
  return undefined;
}

/**
 * Whether a node's update may change which pods may be placed on it: its cordon, its
 * NoSchedule/NoExecute taints (nodeRejectsPod), or its labels (volumes' node affinity, pods' node
 * selection). A status heartbeat does not.
 */
export function nodePlacementChanged(before: Node, after: Node): boolean {
  if (!!before.spec?.unschedulable !== !!after.spec?.unschedulable) return true;
  if (!isDeepStrictEqual(before.metadata?.labels ?? {}, after.metadata?.labels ?? {})) return true;
  const taints = (n: Node): string =>
    JSON.stringify((n.spec?.taints ?? []).filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute').map((t) => [t.key, t.value ?? '', t.effect]).sort());
  return taints(before) !== taints(after);
}
