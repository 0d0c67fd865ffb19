import { realClock, TokenBucket } from '@topovol/shared';
import type { MeasuredCapacity } from './capacity-object.js';

/** What the loop knows of one item between GetCapacity calls. */
export interface ItemState {
  measured?: MeasuredCapacity;
  /** The GetCapacity request (requestKey) `measured` answers: a class re-created with other parameters asks another. */
  measuredFor?: string;
  /** When the last successful call returned: the poll interval counts from here. */
  refreshedAt: number;
  /** A volume event (or a failed provisioning, a changed class) since the last call started: ask again. */
  dirty: boolean;
  /** When the item was first wanted, and when the last such event arrived (see callNeededSince). */
  createdAt?: number;
  lastEventAt?: number;
  /** When the call whose answer `measured` holds started: an older answer never replaces a newer one. */
  answerStartedAt?: number;
  /**
   * When the last call made because of such an event started. Only these calls open a coalescing
   * window: a poll or the first measurement just before an event must not delay it.
   */
  eventCallAt?: number;
  /**
   * Refreshes a failed provisioning may still cause: FAILURE_REFRESH_BURST at once, refilled at one
   * per poll interval (anyone may bump a failure Event). Made on the first failure.
   */
  failureRefreshes?: TokenBucket;
  /** A GetCapacity call for this item is running or waiting for a slot. */
  inflight?: boolean;
  error?: string;
  /** Failed calls in a row, and when to ask again. */
  failures: number;
  retryAt?: number;
}

export interface RefreshIntervals {
  pollIntervalMs: number;
  minRefreshMs: number;
}

export type RefreshDecision =
  /**
   * Ask the driver now. `event`: because of a change, which opens a coalescing window; `retry`: after
   * failed calls, paced by their backoff (retryAt) alone.
   */
  | { call: true; cause: 'first' | 'event' | 'retry' | 'poll' }
  /** Not now: ask again after `afterMs`. */
  | { call: false; afterMs: number };

/**
 * When to ask the driver for an item, decided on the leading edge: the first change after a quiet
 * spell is measured at once, and further changes within --capacity-min-refresh-interval of that
 * call are merged into one call at the end of the interval. A burst therefore costs one call at its
 * start and at most one per interval after it, while an isolated change, even one right after a
 * poll, waits for nothing. external-provisioner refreshes at once on every change
 * (pkg/capacity/capacity.go, refreshTopology: a work-queue Add) and coalesces only what is still
 * queued; the interval bounds the calls of a long burst, which the queue alone does not.
 * A change that arrives while a call is running is not covered by that call's answer (the driver
 * may have answered before the change): the item stays dirty and is asked again when it returns.
 */
export function refreshDecision(st: ItemState, now: number, iv: RefreshIntervals): RefreshDecision {
  const retryAt = st.retryAt ?? 0;
  if (!st.measured || st.dirty) {
    const windowEnd = st.measured && st.eventCallAt !== undefined ? st.eventCallAt + iv.minRefreshMs : 0;
    const earliest = Math.max(windowEnd, retryAt);
    if (now < earliest) return { call: false, afterMs: earliest - now };
    return { call: true, cause: !st.measured ? 'first' : st.failures > 0 ? 'retry' : 'event' };
  }
  const due = st.refreshedAt + iv.pollIntervalMs;
  if (now >= due) return now < retryAt ? { call: false, afterMs: retryAt - now } : { call: true, cause: 'poll' };
  return { call: false, afterMs: Math.max(1, due - now) };
}

/**
 * The instant from which a call answers what the item needs (a call of the same request that
 * started then or later will do, see source/running-requests.ts): its first figure, since it was
 * wanted; an event, since the last one; a poll, since it fell due. A retry after failed calls keeps
 * its own backoff and shares nothing.
 */
export function callNeededSince(st: ItemState, cause: 'first' | 'event' | 'retry' | 'poll', iv: RefreshIntervals): number {
  switch (cause) {
    case 'first':
      return st.createdAt ?? Infinity;
    case 'event':
      return st.lastEventAt ?? Infinity;
    case 'poll':
      return st.refreshedAt + iv.pollIntervalMs;
    case 'retry':
      return Infinity;
  }
}

/** One failed provisioning usually shows twice (the selected node removed, then its Event): both may refresh. */
export const FAILURE_REFRESH_BURST = 2;

/** Whether a failed provisioning may refresh the item now (on the loop's clock); takes a token if so. */
export function takeFailureRefresh(st: ItemState, now: () => number, pollIntervalMs: number): boolean {
  st.failureRefreshes ??= new TokenBucket(1000 / pollIntervalMs, FAILURE_REFRESH_BURST, { ...realClock, now });
  return st.failureRefreshes.tryAccept();
}
