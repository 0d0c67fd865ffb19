/** The Status object of a watch's ERROR event. */
export interface WatchErrorStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/**
 * What a watch that ended with an ERROR event is followed by: 'gone', our resourceVersion is too old
 * (410): list again; 'rewatch', throttled (429): watch again from the same resourceVersion after a
 * backoff step, as client-go's reflector does; 'relist', anything else: list again, as the reflector
 * ends its watch and relists. A lagging server's "Too large resource version" (504 behind a load
 * balancer) could fail a watch at that resourceVersion for as long as it lags, and an internal error
 * (500: etcd's "no leader", an event without its previous value) may stand for an event the watch
 * never delivered, which a watch resumed after it would never deliver either (kubernetes #123072:
 * events lost by the watch cache's reflector, the one reflector that resumes after a 500, with
 * MaxInternalErrorRetryDuration from kubernetes #111387).
 */
export function watchErrorOutcome(status: WatchErrorStatus): 'gone' | 'rewatch' | 'relist' {
  if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') return 'gone';
  if (status.code === 429) return 'rewatch';
  return 'relist';
}
