import { labelValue } from '@topovol/shared';
import type { CSINode, Node } from '@topovol/shared';
import type { Segment } from './segment.js';
import { segmentKey, uniqueSegments } from './segment.js';
import type { SegmentMode } from './segment-mode.js';

/**
 * The segment one node belongs to, or undefined when it belongs to none.
 *
 * csinode: a node counts only once its CSINode lists the driver (the driver's node plugin is
 * registered there); a driver without topology keys gives the empty segment, i.e. the whole
 * cluster; a node lacking one of the keys as a label is skipped, since the scheduler could never
 * match it.
 * prefix: every label under the prefix; a node with none contributes nothing.
 * domains: the longest leading run of the ordered labels that the node has, so a node labelled with
 * region and zone but no rack is in the (region, zone) domain.
 * In prefix and domains modes too, a node where the driver is not registered counts only with
 * `anyNode`: capacity for nodes the driver cannot serve would steer pods to them.
 */
export function segmentOfNode(mode: SegmentMode, node: Node, csiNode: CSINode | undefined, driverName: string): Segment | undefined {
  const labels = node.metadata?.labels ?? {};
  if (mode.kind !== 'csinode' && !mode.anyNode && !csiNode?.spec?.drivers?.some((d) => d.name === driverName)) return undefined;
  switch (mode.kind) {
    case 'csinode': {
      const driver = csiNode?.spec?.drivers?.find((d) => d.name === driverName);
      if (!driver) return undefined;
      const out: Record<string, string> = {};
      for (const key of driver.topologyKeys ?? []) {
        const value = labelValue(labels, key);
        if (value === undefined) return undefined;
        out[key] = value;
      }
      return out;
    }
    case 'prefix': {
      const entries = Object.entries(labels).filter(([k]) => k.startsWith(mode.prefix));
      return entries.length > 0 ? Object.fromEntries(entries) : undefined;
    }
    case 'domains': {
      const out: Record<string, string> = {};
      for (const key of mode.labels) {
        const value = labelValue(labels, key);
        if (value === undefined) break;
        out[key] = value;
      }
      return Object.keys(out).length > 0 ? out : undefined;
    }
  }
}

/** A node (not being deleted) and the segment it belongs to. */
export interface PlacedNode {
  node: Node;
  segment: Segment;
}

/** The nodes that belong to a segment, each with its segment: what a sync computes once. */
export function placeNodes(mode: SegmentMode, nodes: readonly Node[], csiNodeOf: (name: string) => CSINode | undefined, driverName: string): PlacedNode[] {
  const out: PlacedNode[] = [];
  for (const node of nodes) {
    if (node.metadata?.deletionTimestamp) continue;
    const segment = segmentOfNode(mode, node, csiNodeOf(node.metadata?.name ?? ''), driverName);
    if (segment) out.push({ node, segment });
  }
  return out;
}

/** The label keys the nodes of each segment carry, by segment key (see deeperKeys). */
export function segmentLabelKeys(placed: readonly PlacedNode[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const { node, segment } of placed) {
    const key = segmentKey(segment);
    let keys = out.get(key);
    if (!keys) out.set(key, (keys = new Set()));
    for (const k of Object.keys(node.metadata?.labels ?? {})) keys.add(k);
  }
  return out;
}

/** Every segment with at least one node, deduplicated and in a stable order. */
export function computeSegments(mode: SegmentMode, nodes: readonly Node[], csiNodeOf: (name: string) => CSINode | undefined, driverName: string): Segment[] {
  return uniqueSegments(placeNodes(mode, nodes, csiNodeOf, driverName).map((p) => p.segment));
}

/**
 * The hierarchy of `domains` mode: every ancestor domain of each segment (region, then region+zone,
 * ...), deduplicated. Pools may serve any level of it (a Ceph-CSI topology-constrained pool's
 * domainSegments may name any prefix of the domain labels).
 */
export function domainAncestors(mode: SegmentMode, segments: readonly Segment[]): Segment[] {
  if (mode.kind !== 'domains') return [];
  const out: Segment[] = [];
  for (const s of segments) {
    const prefix: Record<string, string> = {};
    for (const key of mode.labels) {
      const v = s[key];
      if (v === undefined) break;
      prefix[key] = v;
      if (Object.keys(prefix).length < Object.keys(s).length) out.push({ ...prefix });
    }
  }
  return uniqueSegments(out);
}
