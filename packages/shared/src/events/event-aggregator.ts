import type { Clock } from '../ratelimit/clock.js';

/** client-go's EventAggregator defaults (tools/record/events_cache.go): 10 messages within 10 minutes. */
export const AGGREGATE_MAX_MESSAGES = 10;
export const AGGREGATE_INTERVAL_MS = 600_000;
/** The longest message an Event is written with (event-recorder.ts). */
export const MESSAGE_MAX_CHARS = 1024;
/** client-go's EventAggregatorByReasonMessageFunc. */
export const COMBINED_PREFIX = '(combined from similar events): ';

interface Similar {
  messages: Set<string>;
  last: number;
}

/**
 * Similar Events (one object, source, type and reason; different messages), as client-go's
 * EventAggregator combines them: once 10 different messages came within 10 minutes of each other,
 * each further one is written into one Event, "(combined from similar events): <message>", whose
 * count grows and whose message is the latest, so that `kubectl describe` does not list a new Event
 * for every message of a busy object. Unlike client-go, which combines before its spam filter, only
 * Events the per-object spam filter let through are counted (event-recorder.ts filters first).
 */
export class EventAggregator {
  private readonly similar = new Map<string, Similar>();

  constructor(
    private readonly clock: Clock,
    private readonly maxRemembered: number,
  ) {}

  /** The message to write for an Event of this similarity key, and whether it is the combined one. */
  aggregate(similarKey: string, message: string): { message: string; combined: boolean } {
    const now = this.clock.now();
    let s = this.similar.get(similarKey);
    // Re-inserted to keep the map in least-recently-used order for eviction.
    if (s) this.similar.delete(similarKey);
    if (!s || now - s.last > AGGREGATE_INTERVAL_MS) s = { messages: new Set(), last: now };
    // As written (event-recorder.ts cuts messages there): longer ones differ in nothing an Event shows.
    s.messages.add(message.slice(0, MESSAGE_MAX_CHARS));
    s.last = now;
    this.similar.set(similarKey, s);
    if (this.similar.size > this.maxRemembered) this.similar.delete(this.similar.keys().next().value!);
    if (s.messages.size < AGGREGATE_MAX_MESSAGES) return { message, combined: false };
    // As client-go, the set stops growing at the threshold (it drops any one; here the oldest).
    s.messages.delete(s.messages.values().next().value!);
    return { message: `${COMBINED_PREFIX}${message}`, combined: true };
  }
}
