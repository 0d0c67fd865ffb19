import { labelValue } from '@topovol/shared';
import type { CSINode, Node } from '@topovol/shared';
import type { PlacedNode } from './compute-segments.js';
import { segmentKey } from './segment.js';
import type { SegmentMode } from './segment-mode.js';

/** A node the driver serves that belongs to no segment, and why: its storage is counted nowhere. */
export interface UnsegmentedNode {
  node: Node;
  why: string;
}

/**
 * Nodes where the driver is registered (or any node, in prefix/domains modes with `anyNode`) whose
 * labels give no segment: a CSINode naming a topology key the node lacks, or a node with none of
 * the prefix's or domains' labels. segmentOfNode skips them, as external-provisioner does; this says
 * which and why, so an operator sees why a node gets no capacity (and no pods needing it).
 */
export function unsegmentedNodes(mode: SegmentMode, nodes: readonly Node[], csiNodeOf: (name: string) => CSINode | undefined, driverName: string): UnsegmentedNode[] {
  const out: UnsegmentedNode[] = [];
  for (const node of nodes) {
    if (node.metadata?.deletionTimestamp) continue;
    const labels = node.metadata?.labels ?? {};
    const driver = csiNodeOf(node.metadata?.name ?? '')?.spec?.drivers?.find((d) => d.name === driverName);
    if (!driver && (mode.kind === 'csinode' || !mode.anyNode)) continue;
    switch (mode.kind) {
      case 'csinode': {
        const missing = (driver?.topologyKeys ?? []).filter((k) => labelValue(labels, k) === undefined);
        if (missing.length > 0) out.push({ node, why: `its CSINode lists topology key(s) ${missing.join(', ')} for driver ${driverName}, but the node has no such label` });
        break;
      }
      case 'prefix':
        if (!Object.keys(labels).some((k) => k.startsWith(mode.prefix))) out.push({ node, why: `it has no label under the topology prefix ${mode.prefix}` });
        break;
      case 'domains':
        if (labelValue(labels, mode.labels[0] ?? '') === undefined) out.push({ node, why: `it lacks the first domain label ${mode.labels[0] ?? ''}` });
        break;
    }
  }
  return out;
}

/**
 * csinode mode: nodes that carry a label their own segment's selector excludes (`deeper`, see
 * deeperKeys): a CSINode listing fewer topology keys than the node has labels for (a driver rollout
 * adding a key), next to nodes whose CSINodes list that key. No label selector can tell such a
 * node from the deeper ones, so no object of its segment matches it and kube-scheduler sees no
 * capacity there; this says so. (In domains mode the exclusions leave out what a segment's own
 * nodes carry, as such a node has a gap in its labels and the next domain key still tells the
 * deeper nodes apart.)
 */
export function selfExcludedNodes(mode: SegmentMode, placed: readonly PlacedNode[], driverName: string, deeper: ReadonlyMap<string, readonly string[]>): UnsegmentedNode[] {
  if (mode.kind !== 'csinode') return [];
  const out: UnsegmentedNode[] = [];
  for (const { node, segment } of placed) {
    const labels = node.metadata?.labels ?? {};
    const carried = (deeper.get(segmentKey(segment)) ?? []).filter((k) => labelValue(labels, k) !== undefined);
    if (carried.length > 0) out.push({ node, why: `it has label(s) ${carried.join(', ')}, which its CSINode does not list as topology keys for driver ${driverName} while other nodes' CSINodes do: no CSIStorageCapacity object can match it` });
  }
  return out;
}
