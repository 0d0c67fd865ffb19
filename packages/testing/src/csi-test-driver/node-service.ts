import type { TopologySegment } from '@topovol/shared/csi';
import type { CsiWire } from '@topovol/shared/csi';
type NodeGetInfoResponse = CsiWire.NodeGetInfoResponse;

/** What a per-node driver reports about its node (CSI NodeGetInfo). */
export interface CsiTestDriverNode {
  nodeId: string;
  /** The node's segment, e.g. `{ 'topology.example.com/node': 'node-a' }`; omitted: none. */
  accessibleTopology?: TopologySegment;
  /** 0 (the default) means no limit. */
  maxVolumesPerNode?: number;
}

export function nodeGetInfoResponse(node: CsiTestDriverNode): NodeGetInfoResponse {
  return {
    nodeId: node.nodeId,
    maxVolumesPerNode: String(node.maxVolumesPerNode ?? 0),
    accessibleTopology: node.accessibleTopology ? { segments: { ...node.accessibleTopology } } : null,
  };
}
