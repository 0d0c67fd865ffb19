import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSync } from '@grpc/proto-loader';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { CSI_PROTO_LOADER_OPTIONS } from '../../csi/csi-proto.js';
import type { TopologySegment } from '../../csi/csi-types.js';
import type * as W from '../../csi/csi-wire.js';

/** What a per-node driver reports about its node (CSI NodeGetInfo). */
export interface CsiTestDriverNode {
  nodeId: string;
  /** The node's segment, e.g. `{ 'topology.example.com/node': 'node-a' }`; omitted: none. */
  accessibleTopology?: TopologySegment;
  /** 0 (the default) means no limit. */
  maxVolumesPerNode?: number;
}

export type NodeGetInfoRequest = Record<string, never>;

export interface NodeGetInfoResponse {
  nodeId: string;
  maxVolumesPerNode: W.Int64;
  accessibleTopology: W.Topology | null;
}

export interface NodeMethods {
  NodeGetInfo: MethodDefinition<NodeGetInfoRequest, NodeGetInfoResponse>;
}

/** As csiProtoPath: tsc does not copy the .proto, so the compiled module looks back in src. */
function nodeProtoPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'csi-node.proto'), path.resolve(here, '..', '..', '..', '..', 'src', 'testing', 'csi-test-driver', 'csi-node.proto')];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`csi-node.proto not found (looked in ${candidates.join(', ')})`);
  return found;
}

let loaded: (NodeMethods & ServiceDefinition) | undefined;

/** The csi.v1 Node service definition (NodeGetInfo only), loaded once per process. */
export function csiNodeService(): NodeMethods & ServiceDefinition {
  if (loaded) return loaded;
  const def = loadSync(nodeProtoPath(), CSI_PROTO_LOADER_OPTIONS)['csi.v1.Node'];
  if (!def || 'format' in def) throw new Error('csi-node.proto does not define the csi.v1 Node service');
  loaded = def as unknown as NodeMethods & ServiceDefinition;
  return loaded;
}

export function nodeGetInfoResponse(node: CsiTestDriverNode): NodeGetInfoResponse {
  return {
    nodeId: node.nodeId,
    maxVolumesPerNode: String(node.maxVolumesPerNode ?? 0),
    accessibleTopology: node.accessibleTopology ? { segments: { ...node.accessibleTopology } } : null,
  };
}
