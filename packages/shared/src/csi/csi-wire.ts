/**
 * The csi.v1 messages as @grpc/proto-loader presents them with CSI_PROTO_LOADER_OPTIONS: camelCase
 * fields, int64 as decimal strings, enums by name. Fields are optional because a sender may omit
 * them; a decoded message has every field (defaults, null for unset messages). Only the fields in
 * csi.proto appear here.
 */

export type Int64 = string;
export type StringMap = Record<string, string>;

export type PluginServiceType =
  | 'UNKNOWN'
  | 'CONTROLLER_SERVICE'
  | 'VOLUME_ACCESSIBILITY_CONSTRAINTS'
  | 'GROUP_CONTROLLER_SERVICE'
  | 'SNAPSHOT_METADATA_SERVICE';

export type VolumeExpansionType = 'UNKNOWN' | 'ONLINE' | 'OFFLINE';

export type AccessMode =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

export type ControllerRpcType =
  | 'UNKNOWN'
  | 'CREATE_DELETE_VOLUME'
  | 'PUBLISH_UNPUBLISH_VOLUME'
  | 'LIST_VOLUMES'
  | 'GET_CAPACITY'
  | 'CREATE_DELETE_SNAPSHOT'
  | 'LIST_SNAPSHOTS'
  | 'CLONE_VOLUME'
  | 'PUBLISH_READONLY'
  | 'EXPAND_VOLUME'
  | 'LIST_VOLUMES_PUBLISHED_NODES'
  | 'VOLUME_CONDITION'
  | 'GET_VOLUME'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'MODIFY_VOLUME'
  | 'GET_SNAPSHOT';

// An enum value a newer peer sends that csi.proto does not name arrives as its number.
type Enum<T extends string> = T | number;

export type GetPluginInfoRequest = Record<string, never>;
export interface GetPluginInfoResponse {
  name?: string;
  vendorVersion?: string;
  manifest?: StringMap;
}

export type GetPluginCapabilitiesRequest = Record<string, never>;
export interface PluginCapability {
  service?: { type?: Enum<PluginServiceType> } | null;
  volumeExpansion?: { type?: Enum<VolumeExpansionType> } | null;
  type?: 'service' | 'volumeExpansion';
}
export interface GetPluginCapabilitiesResponse {
  capabilities?: PluginCapability[];
}

export type ProbeRequest = Record<string, never>;
export interface ProbeResponse {
  ready?: { value?: boolean } | null;
}

export interface VolumeCapability {
  block?: Record<string, never> | null;
  mount?: { fsType?: string; mountFlags?: string[]; volumeMountGroup?: string } | null;
  accessMode?: { mode?: Enum<AccessMode> } | null;
  accessType?: 'block' | 'mount';
}

export interface CapacityRange {
  requiredBytes?: Int64;
  limitBytes?: Int64;
}

export interface Topology {
  segments?: StringMap;
}

export interface TopologyRequirement {
  requisite?: Topology[];
  preferred?: Topology[];
}

export interface CreateVolumeRequest {
  name?: string;
  capacityRange?: CapacityRange | null;
  volumeCapabilities?: VolumeCapability[];
  parameters?: StringMap;
  accessibilityRequirements?: TopologyRequirement | null;
}

export interface Volume {
  capacityBytes?: Int64;
  volumeId?: string;
  volumeContext?: StringMap;
  accessibleTopology?: Topology[];
}

export interface CreateVolumeResponse {
  volume?: Volume | null;
}

export interface DeleteVolumeRequest {
  volumeId?: string;
}
export type DeleteVolumeResponse = Record<string, never>;

export interface GetCapacityRequest {
  volumeCapabilities?: VolumeCapability[];
  parameters?: StringMap;
  accessibleTopology?: Topology | null;
}

export interface GetCapacityResponse {
  availableCapacity?: Int64;
  maximumVolumeSize?: { value?: Int64 } | null;
}

export type ControllerGetCapabilitiesRequest = Record<string, never>;
export interface ControllerServiceCapability {
  rpc?: { type?: Enum<ControllerRpcType> } | null;
  type?: 'rpc';
}
export interface ControllerGetCapabilitiesResponse {
  capabilities?: ControllerServiceCapability[];
}

// Node service (NodeGetInfo only: served by the CSI test driver of a per-node deployment).
export type NodeGetInfoRequest = Record<string, never>;

export interface NodeGetInfoResponse {
  nodeId: string;
  maxVolumesPerNode: Int64;
  accessibleTopology: Topology | null;
}
