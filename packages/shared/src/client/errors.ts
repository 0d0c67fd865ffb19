import { InvalidPathSegmentError } from './path-segment.js';
/**
 * Error classification for everything the runtime does over HTTP, so callers branch on a kind
 * (as client-go's apierrors.IsNotFound and friends) instead of parsing messages.
 */

export type ApiErrorKind =
  | 'NotFound'
  | 'Conflict'
  | 'AlreadyExists'
  | 'Gone'
  | 'TooManyRequests'
  | 'Forbidden'
  | 'Unauthorized'
  | 'Invalid'
  | 'BadRequest'
  | 'Timeout'
  | 'Connection'
  | 'ServerError'
  | 'Aborted'
  | 'Fenced'
  | 'Unknown';

export interface ClassifiedError {
  kind: ApiErrorKind;
  /** HTTP status code, when there was an answer. */
  code?: number;
  message: string;
  /** Seconds the server asked us to wait (Retry-After header or Status details). */
  retryAfterSeconds?: number;
  /** Whether trying the same request again later can succeed. */
  retriable: boolean;
}

/** The parts of a metav1.Status the runtime uses. */
export interface ApiStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  /** A cause's `reason` is Go's StatusCause.Type (e.g. NamespaceTerminating). */
  details?: { name?: string; kind?: string; retryAfterSeconds?: number; causes?: { reason?: string; message?: string; field?: string }[] };
}

/** A non-2xx answer of the API server, with its Status when the body was one. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: ApiStatus,
    readonly retryAfterSeconds?: number,
  ) {
    super(status.message || `HTTP ${code}${status.reason ? ` ${status.reason}` : ''}`);
    this.name = 'KubeApiError';
  }

  get reason(): string | undefined {
    return this.status.reason;
  }

  static fromResponse(code: number, body: string, retryAfter?: string): KubeApiError {
    let status: ApiStatus = {};
    try {
      const parsed = JSON.parse(body) as unknown;
      if (parsed && typeof parsed === 'object') status = parsed;
    } catch {
      status = { message: body.trim().slice(0, 500) || undefined };
    }
    return new KubeApiError(code, status, parseRetryAfter(retryAfter) ?? status.details?.retryAfterSeconds);
  }
}

/**
 * A write the client refused to send: its loop's leadership may have passed to another replica
 * (WriteFence). Nothing reached the server, so nothing was applied.
 */
export class WriteFencedError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly why: string,
  ) {
    super(`${method} ${path} not sent: ${why}`);
    this.name = 'WriteFencedError';
  }
}

/** Retry-After is delay-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(v: string | undefined, now = Date.now()): number | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - now) / 1000));
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'ERR_STREAM_PREMATURE_CLOSE',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

function kindOfStatus(code: number, reason: string | undefined): ApiErrorKind {
  switch (reason) {
    case 'NotFound':
      return 'NotFound';
    case 'AlreadyExists':
      return 'AlreadyExists';
    case 'Conflict':
      return 'Conflict';
    case 'Gone':
    case 'Expired':
      return 'Gone';
    case 'TooManyRequests':
      return 'TooManyRequests';
    case 'Forbidden':
      return 'Forbidden';
    case 'Unauthorized':
      return 'Unauthorized';
    case 'Invalid':
      return 'Invalid';
    case 'Timeout':
    case 'ServerTimeout':
      return 'Timeout';
  }
  if (code === 404) return 'NotFound';
  if (code === 409) return 'Conflict';
  if (code === 410) return 'Gone';
  if (code === 429) return 'TooManyRequests';
  if (code === 403) return 'Forbidden';
  if (code === 401) return 'Unauthorized';
  if (code === 422) return 'Invalid';
  if (code === 400) return 'BadRequest';
  if (code === 504 || code === 408) return 'Timeout';
  if (code >= 500) return 'ServerError';
  return 'Unknown';
}

const RETRIABLE: ReadonlySet<ApiErrorKind> = new Set<ApiErrorKind>(['Conflict', 'Gone', 'TooManyRequests', 'Timeout', 'Connection', 'ServerError', 'Fenced', 'Unknown']);

/** Classifies any thrown value: KubeApiError, client-node's ApiException, fetch and socket errors. */
export function classifyError(err: unknown): ClassifiedError {
  if (err instanceof KubeApiError) {
    const kind = kindOfStatus(err.code, err.reason);
    return { kind, code: err.code, message: err.message, retryAfterSeconds: err.retryAfterSeconds, retriable: RETRIABLE.has(kind) };
  }
  // Retriable: a lease renewed late lifts the fence; a lost one ends the process.
  if (err instanceof WriteFencedError) return { kind: 'Fenced', message: err.message, retriable: true };
  // Refused before it was sent (a name no object can have): never applied, never will be.
  if (err instanceof InvalidPathSegmentError) return { kind: 'BadRequest', message: err.message, retriable: false };
  const e = err as { name?: string; code?: unknown; type?: string; message?: string; body?: unknown; headers?: Record<string, string>; cause?: unknown } | null;
  const message = e?.message ?? String(err);
  // client-node's generated APIs throw ApiException { code: number, body, headers }.
  if (e && typeof e.code === 'number') {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? {});
    return classifyError(KubeApiError.fromResponse(e.code, body, e.headers?.['retry-after']));
  }
  if (e?.name === 'AbortError' || e?.type === 'aborted') return { kind: 'Aborted', message, retriable: false };
  const sysCode = typeof e?.code === 'string' ? e.code : (e?.cause as { code?: string } | undefined)?.code;
  if (sysCode && TIMEOUT_CODES.has(sysCode)) return { kind: 'Timeout', message, retriable: true };
  if (e?.type === 'request-timeout' || e?.type === 'body-timeout') return { kind: 'Timeout', message, retriable: true };
  if ((sysCode && CONNECTION_CODES.has(sysCode)) || e?.type === 'system' || e?.name === 'FetchError') {
    return { kind: 'Connection', message, retriable: true };
  }
  return { kind: 'Unknown', message, retriable: true };
}

const is =
  (kind: ApiErrorKind) =>
  (err: unknown): boolean =>
    classifyError(err).kind === kind;

export const isNotFound = is('NotFound');
export const isConflict = is('Conflict');
export const isAlreadyExists = is('AlreadyExists');
export const isGone = is('Gone');
export const isTooManyRequests = is('TooManyRequests');
export const isForbidden = is('Forbidden');
export const isInvalid = is('Invalid');
export const isTimeout = is('Timeout');
export const isConnectionError = is('Connection');
/** A write the client's fence held back unsent (WriteFencedError): a pause, not a failure. */
export const isFenced = is('Fenced');

/**
 * A write the API server refused as sent: authorization, an admission plugin, policy or webhook,
 * validation (403, 422, 400). Nothing was written, and the same write is refused again until
 * someone changes the rules; not a race (Conflict) nor an outcome unknown (writeMayHaveApplied).
 */
export function isRefusal(err: unknown): boolean {
  const kind = classifyError(err).kind;
  return kind === 'Forbidden' || kind === 'Invalid' || kind === 'BadRequest';
}

/**
 * A create refused because its namespace is gone (404 for the namespace itself) or being deleted
 * (403 with cause NamespaceTerminating, from the NamespaceLifecycle admission plugin): nothing can
 * be created there, and a namespace of that name made later is someone else's.
 */
export function isNamespaceGone(err: unknown, namespace: string): boolean {
  if (!(err instanceof KubeApiError)) return false;
  const d = err.status.details;
  if (err.code === 404) return d?.kind === 'namespaces' && d.name === namespace;
  return err.code === 403 && (d?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating');
}

/**
 * A 404 that says this object is not there: kube-apiserver's Status names the resource and the
 * object (`details.kind` is the resource's plural, `details.name` the name). A 404 without that, e.g.
 * "404 page not found" from a proxy or an ingress in front of the API server, says nothing about the
 * object, so a caller that would destroy something on "gone" must not take it as gone.
 */
export function isNotFoundNamed(err: unknown, resource: string, name: string): boolean {
  if (!(err instanceof KubeApiError) || err.code !== 404 || err.reason !== 'NotFound') return false;
  const d = err.status.details;
  return d?.kind === resource && d.name === name;
}

const OUTCOME_UNKNOWN: ReadonlySet<ApiErrorKind> = new Set<ApiErrorKind>(['Timeout', 'Connection', 'ServerError', 'Aborted', 'Unknown']);

/**
 * A failed write that may still have been applied: no answer came (a timeout, a dropped connection,
 * an abort) or the server failed after accepting it (5xx). A 4xx refusal (Conflict, Invalid, …)
 * means nothing was written. A caller that picks between several objects must read back the one it
 * wrote before picking another.
 */
export function writeMayHaveApplied(err: unknown): boolean {
  return OUTCOME_UNKNOWN.has(classifyError(err).kind);
}
