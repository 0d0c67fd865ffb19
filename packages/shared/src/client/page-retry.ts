import { KubeApiError } from './errors.js';

/**
 * How many times one list page is asked for again before its list fails: client-go's rest client
 * default (`maxRetries: 10` in staging/src/k8s.io/client-go/rest/request.go).
 */
export const PAGE_RETRIES = 10;

/**
 * The wait after a dropped connection: client-go answers a GET's reset or EOF with an artificial
 * `Retry-After: 1` (`retryAfterResponse` in staging/src/k8s.io/client-go/rest/with_retry.go).
 */
export const DROPPED_PAGE_WAIT_MS = 1_000;

/**
 * The longest wait spent inside a list. A longer Retry-After fails the list instead, to the
 * caller's backoff, which honours it too (the informers' list-watch loop, a controller's re-queue):
 * a worker reading a namespace's pods is not held inside the read for a minute.
 */
export const PAGE_RETRY_MAX_WAIT_MS = 10_000;

/** Connection errors client-go retries a GET after (utilnet.IsConnectionReset and IsProbableEOF). */
const DROPPED = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * How long to wait before asking for a failed list page again, or undefined when its failure is the
 * list's. As client-go's rest client (`IsNextRetry` and `checkWait` in rest/with_retry.go): a 429 or
 * 5xx that says when to come back (Retry-After; API Priority and Fairness sends one with each
 * 429), or a connection dropped before the answer was whole, at most PAGE_RETRIES times in a row.
 * Without this, one throttled page of a long list failed the whole list, and the informer started
 * over from its first page after a backoff: on a busy API server a relist of many pages could
 * keep failing, its cache stale, each try adding the load that throttled it.
 * Anything else (410 Expired for a continue token, 403, a 500 without Retry-After, a Retry-After
 * past PAGE_RETRY_MAX_WAIT_MS) fails the list.
 */
export function pageRetryWaitMs(err: unknown, retriesSoFar: number): number | undefined {
  if (retriesSoFar >= PAGE_RETRIES) return undefined;
  if (err instanceof KubeApiError) {
    const s = err.retryAfterSeconds;
    if (!(err.code === 429 || err.code >= 500) || s === undefined || !Number.isFinite(s)) return undefined;
    const ms = Math.max(0, s) * 1000;
    return ms <= PAGE_RETRY_MAX_WAIT_MS ? ms : undefined;
  }
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof e?.code === 'string' ? e.code : e?.cause?.code;
  return typeof code === 'string' && DROPPED.has(code) ? DROPPED_PAGE_WAIT_MS : undefined;
}
