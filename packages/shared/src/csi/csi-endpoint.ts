import path from 'node:path';

/**
 * The file path of a CSI endpoint given as `unix:///abs/path`, `unix:/abs/path`, `unix:rel/path`
 * or a plain path, the forms the kubernetes-csi sidecars accept for `--csi-address`. CSI drivers
 * listen on unix sockets only, so any other scheme is refused.
 */
export function csiSocketPath(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)) throw new Error(`CSI endpoint must be a unix socket, got ${endpoint}`);
  if (endpoint === '') throw new Error('CSI endpoint is empty');
  return endpoint;
}

/** The gRPC target for a CSI endpoint (grpc-js spells absolute unix sockets `unix:///path`). */
export function csiGrpcTarget(endpoint: string): string {
  const p = csiSocketPath(endpoint);
  return path.isAbsolute(p) ? `unix://${p}` : `unix:${p}`;
}
