// @topovol/shared/csi: the CSI v1 gRPC plumbing (kept off the main index so packages that do not
// talk to a CSI driver never load gRPC).
export * from './csi-client.js';
export * from './csi-endpoint.js';
export * from './csi-error.js';
export * from './csi-retry.js';
export * from './csi-types.js';
export { csiServices, csiProtoPath, CSI_PROTO_LOADER_OPTIONS } from './csi-proto.js';
export type { CsiServices, IdentityMethods, ControllerMethods } from './csi-proto.js';
export type * as CsiWire from './csi-wire.js';
