import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSync } from '@grpc/proto-loader';
import type { Options } from '@grpc/proto-loader';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import type * as W from './csi-wire.js';

/**
 * How the wire objects look in JS. camelCase field names; int64 as decimal strings (byte counts can
 * pass 2^53) which the typed layer turns into bigint; enums by name; unset scalars as their
 * defaults and unset messages as null; `oneofs` names the member that is set.
 */
export const CSI_PROTO_LOADER_OPTIONS: Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/**
 * tsc does not copy .proto files into dist, so the compiled module finds the proto next to itself
 * (if a build copied it) or back in the package's src tree (dist/src/csi → src/csi).
 */
export function csiProtoPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'csi.proto'), path.resolve(here, '..', '..', '..', 'src', 'csi', 'csi.proto')];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`csi.proto not found (looked in ${candidates.join(', ')})`);
  return found;
}

type Method<Req, Res> = MethodDefinition<Req, Res>;

export interface IdentityMethods {
  GetPluginInfo: Method<W.GetPluginInfoRequest, W.GetPluginInfoResponse>;
  GetPluginCapabilities: Method<W.GetPluginCapabilitiesRequest, W.GetPluginCapabilitiesResponse>;
  Probe: Method<W.ProbeRequest, W.ProbeResponse>;
}

export interface ControllerMethods {
  CreateVolume: Method<W.CreateVolumeRequest, W.CreateVolumeResponse>;
  DeleteVolume: Method<W.DeleteVolumeRequest, W.DeleteVolumeResponse>;
  GetCapacity: Method<W.GetCapacityRequest, W.GetCapacityResponse>;
  ControllerGetCapabilities: Method<W.ControllerGetCapabilitiesRequest, W.ControllerGetCapabilitiesResponse>;
}

export interface NodeMethods {
  NodeGetInfo: Method<W.NodeGetInfoRequest, W.NodeGetInfoResponse>;
}

export interface CsiServices {
  identity: IdentityMethods & ServiceDefinition;
  controller: ControllerMethods & ServiceDefinition;
  /** Served by the CSI test driver of a per-node deployment only. */
  node: NodeMethods & ServiceDefinition;
}

let loaded: CsiServices | undefined;

/** The csi.v1 Identity, Controller and Node service definitions, loaded once per process. */
export function csiServices(): CsiServices {
  if (loaded) return loaded;
  const def = loadSync(csiProtoPath(), CSI_PROTO_LOADER_OPTIONS);
  const identity = def['csi.v1.Identity'];
  const controller = def['csi.v1.Controller'];
  const node = def['csi.v1.Node'];
  if (!identity || !controller || !node || 'format' in identity || 'format' in controller || 'format' in node) {
    throw new Error('csi.proto does not define the csi.v1 Identity, Controller and Node services');
  }
  loaded = {
    identity: identity as unknown as CsiServices['identity'],
    controller: controller as unknown as CsiServices['controller'],
    node: node as unknown as CsiServices['node'],
  };
  return loaded;
}
