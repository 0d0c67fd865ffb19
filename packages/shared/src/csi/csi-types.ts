import type * as W from './csi-wire.js';

export type { AccessMode, ControllerRpcType, PluginServiceType, VolumeExpansionType } from './csi-wire.js';

/** One topology segment, e.g. `{ 'topology.kubernetes.io/zone': 'a' }` (CSI `Topology.segments`). */
export type TopologySegment = Readonly<Record<string, string>>;

/** How a volume will be used (CSI `VolumeCapability`): access mode plus block or mount access. */
export interface VolumeCapabilitySpec {
  accessMode: W.AccessMode;
  accessType: 'mount' | 'block';
  fsType?: string;
  mountFlags?: string[];
}

/** What external-provisioner sends for a plain ReadWriteOnce filesystem claim. */
export const DEFAULT_VOLUME_CAPABILITY: VolumeCapabilitySpec = { accessMode: 'SINGLE_NODE_WRITER', accessType: 'mount' };

export interface PluginInfo {
  name: string;
  vendorVersion: string;
  manifest: Record<string, string>;
}

export interface PluginCapabilities {
  /** Service capabilities by name; values csi.proto does not know are left out. */
  services: ReadonlySet<W.PluginServiceType>;
  controllerService: boolean;
  volumeAccessibilityConstraints: boolean;
  volumeExpansion?: W.VolumeExpansionType;
}

export interface TopologyRequirementSpec {
  requisite?: TopologySegment[];
  preferred?: TopologySegment[];
}

export interface GetCapacityParams {
  /** StorageClass parameters (empty for generic ephemeral or `<ephemeral>` capacity). */
  parameters?: Record<string, string>;
  /** The segment to ask about; omitted means the driver's total. */
  accessibleTopology?: TopologySegment;
  volumeCapabilities?: VolumeCapabilitySpec[];
}

export interface Capacity {
  availableCapacity: bigint;
  /** Only when the driver reported it (CSI `maximum_volume_size` is a wrapper: unset ≠ 0). */
  maximumVolumeSize?: bigint;
}

export interface CreateVolumeParams {
  name: string;
  requiredBytes?: bigint;
  limitBytes?: bigint;
  /** Defaults to [DEFAULT_VOLUME_CAPABILITY]: the spec requires at least one. */
  volumeCapabilities?: VolumeCapabilitySpec[];
  parameters?: Record<string, string>;
  accessibilityRequirements?: TopologyRequirementSpec;
}

export interface CsiVolume {
  volumeId: string;
  /** 0 means unknown (CSI). */
  capacityBytes: bigint;
  volumeContext: Record<string, string>;
  accessibleTopology: TopologySegment[];
}

// ---- conversions between the typed API and the wire objects (used by client and test driver) ----

export function int64(v: W.Int64 | undefined | null): bigint {
  return v === undefined || v === null || v === '' ? 0n : BigInt(v);
}

export function toWireTopology(segment: TopologySegment): W.Topology {
  return { segments: { ...segment } };
}

export function fromWireTopology(t: W.Topology | null | undefined): TopologySegment {
  return { ...(t?.segments ?? {}) };
}

export function toWireCapability(c: VolumeCapabilitySpec): W.VolumeCapability {
  const access = c.accessType === 'block' ? { block: {} } : { mount: { fsType: c.fsType ?? '', mountFlags: c.mountFlags ?? [] } };
  return { ...access, accessMode: { mode: c.accessMode } };
}

export function fromWireCapability(c: W.VolumeCapability): VolumeCapabilitySpec {
  const mode = c.accessMode?.mode;
  const accessMode: W.AccessMode = typeof mode === 'string' ? mode : 'UNKNOWN';
  if (c.block) return { accessMode, accessType: 'block' };
  const m = c.mount ?? {};
  return {
    accessMode,
    accessType: 'mount',
    ...(m.fsType ? { fsType: m.fsType } : {}),
    ...(m.mountFlags?.length ? { mountFlags: [...m.mountFlags] } : {}),
  };
}

export function toWireVolume(v: CsiVolume): W.Volume {
  return {
    volumeId: v.volumeId,
    capacityBytes: v.capacityBytes.toString(),
    volumeContext: { ...v.volumeContext },
    accessibleTopology: v.accessibleTopology.map(toWireTopology),
  };
}

export function fromWireVolume(v: W.Volume | null | undefined): CsiVolume {
  return {
    volumeId: v?.volumeId ?? '',
    capacityBytes: int64(v?.capacityBytes),
    volumeContext: { ...(v?.volumeContext ?? {}) },
    accessibleTopology: (v?.accessibleTopology ?? []).map(fromWireTopology),
  };
}

/** Whether `segment` has every key/value of `filter` (an empty filter matches everything). */
export function segmentMatches(segment: TopologySegment, filter: TopologySegment): boolean {
  return Object.entries(filter).every(([k, v]) => segment[k] === v);
}
