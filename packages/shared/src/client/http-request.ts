import type http from 'node:http';

/** The server's scheme, host and port (and any base path, e.g. behind a proxy), resolved once per client. */
export interface HttpOrigin {
  protocol: 'http:' | 'https:';
  hostname: string;
  port?: string;
  basePath: string;
  /** user:password from the server URL itself (Basic authentication, as Node takes it from a URL). */
  auth?: string;
}

/** Parses a kubeconfig server URL once; requests then carry only their path. */
export function originOf(server: string): HttpOrigin {
  const u = new URL(server);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`server ${server}: not an http(s) URL`);
  // An IPv6 literal keeps its brackets in a URL but not in Node's request options.
  const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const origin: HttpOrigin = { protocol: u.protocol, hostname, port: u.port || undefined, basePath: u.pathname.replace(/\/+$/, '') };
  if (u.username || u.password) origin.auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  return origin;
}

/** One request as the transport sends it. */
export interface HttpRequest {
  method: string;
  origin: HttpOrigin;
  /** Path and query below the origin's base path, already encoded. */
  path: string;
  headers: http.OutgoingHttpHeaders;
  agent: http.Agent;
  /** JSON text: Node then sends the head and the body in one write. */
  body?: string;
  /** Whole-request deadline, answer included; the request fails with code ETIMEDOUT. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The answer's body is read up to this many bytes (default MAX_ANSWER_BYTES); past them the request fails with AnswerTooLargeError. */
  maxBodyBytes?: number;
  /**
   * Asked once the request has a socket, right before its bytes are written: an error fails it
   * unsent. A request can wait for a socket (every one of the agent's busy) for longer than it took
   * to decide on it: the leader-election fence is asked again here (KubeClient).
   */
  beforeWrite?: () => Error | undefined;
  /** Through Node's http module even where the direct transport could take it (nock intercepts only that). */
  nodeHttp?: boolean;
}

/**
 * The most of an answer read when the caller sets no limit: far above any one object (etcd stores
 * about 1.5 MB) and any list page (paged-list.ts), and below the longest string V8 can make (about
 * 512 MiB), past which decoding the body threw out of the process.
 */
export const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/**
 * An answer cut off at the caller's byte limit: its connection is closed and nothing of it is
 * parsed. A list page held whole is as large as the objects someone else wrote into it.
 */
export class AnswerTooLargeError extends Error {
  readonly code = 'EANSWERTOOLARGE';
  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path}: answer over ${maxBytes} bytes; not read further`);
    this.name = 'AnswerTooLargeError';
  }
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Monotonic time (performance.now) at which the headers arrived: when the server's Date was current. */
  headersAt: number;
}

/** Failures of a pooled keep-alive connection before any answer: the server had closed it. */
export const staleConnectionFailures = new WeakSet<Error>();

/** A request as its errors name it: method and path, without the query. */
export function requestName(req: HttpRequest): string {
  return `${req.method} ${req.origin.basePath}${req.path.split('?')[0]}`;
}

/**
 * What an aborted request fails with: named as Node's own (errors.ts reads the name). The signal is
 * not handed to Node, whose abort destroys the socket with this error whatever state it is in, the
 * same throw as `abandon` avoids (a caller aborting from a handler of the answer's last chunk).
 */
export function abortError(req: HttpRequest): Error {
  return Object.assign(new Error(`${requestName(req)}: aborted`), { name: 'AbortError', code: 'ABORT_ERR' });
}
