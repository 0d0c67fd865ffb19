import { counter, gauge } from '../metrics/registry.js';

/** The informers' metrics, by resource (`plural` or `plural.group`). */
export const relists = counter<'resource'>({
  name: 'topovol_informer_lists_total',
  help: 'Full lists made by informers (initial sync and relists after 410 Gone or errors), by resource.',
  labelNames: ['resource'],
});
export const watchRestarts = counter<'resource' | 'reason'>({
  name: 'topovol_informer_watch_restarts_total',
  help: 'Watches re-established by informers, by resource and reason (timeout, gone, error).',
  labelNames: ['resource', 'reason'],
});
export const cacheErrors = counter<'resource'>({
  name: 'topovol_informer_cache_errors_total',
  help: 'Listed or watched objects that could not be cached (the projection or an index failed on them), by resource; each is skipped, and the cache keeps what it had.',
  labelNames: ['resource'],
});
export const cachedObjects = gauge<'resource'>({
  name: 'topovol_informer_cached_objects',
  help: 'Objects held in the informer cache, by resource.',
  labelNames: ['resource'],
});
export const handlerErrors = counter<'resource'>({
  name: 'topovol_informer_handler_errors_total',
  help: "Informer event handlers that threw, by resource: the handler missed that event (the cache took it; a loop's periodic re-sync, where it has one, catches up). Any increase is a bug to report, with the log line 'event handler failed'.",
  labelNames: ['resource'],
});
