import type http from 'node:http';

/**
 * Where the API server is and how to authenticate to it: what a kubeconfig or the in-cluster
 * ServiceAccount mount resolves to. The client builds one keep-alive agent from it and asks for
 * headers before each request, so rotating credentials (a projected ServiceAccount token, an exec
 * plugin's short-lived token) are picked up without a restart.
 */
export interface ApiEndpoint {
  /** The server's base URL, without a trailing slash. */
  readonly server: string;
  /** A new keep-alive agent carrying the trusted CA and the client certificate, if any (one per client). */
  agent(): Promise<http.Agent>;
  /** Authentication headers for the next request (Authorization, Impersonate-User, ...). */
  authHeaders(): Promise<Readonly<Record<string, string | string[]>>>;
}

/** Connections per server for one client: informer watches plus the loops' workers. */
export const MAX_SOCKETS = 64;
