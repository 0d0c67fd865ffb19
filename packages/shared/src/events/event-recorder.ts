import { randomBytes } from 'node:crypto';
import { classifyError, isAlreadyExists, isNotFound } from '../client/errors.js';
import type { KubeClient } from '../client/kube-client.js';
import { Resources } from '../informer/resources.js';
import { EventAggregator, MESSAGE_MAX_CHARS } from './event-aggregator.js';
import type { KubeObject } from '../informer/object-key.js';
import { errorMessage, logger } from '../logging/logger.js';
import { counter } from '../metrics/registry.js';
import { realClock } from '../ratelimit/clock.js';
import type { Clock } from '../ratelimit/clock.js';
import { doublingBackoffMs } from '../ratelimit/doubling-backoff.js';
import { TokenBucket } from '../ratelimit/token-bucket.js';
import type { Event } from '../types/wire.js';

export type EventType = 'Normal' | 'Warning';

const eventsTotal = counter<'component' | 'type' | 'reason'>({
  name: 'topovol_events_total',
  help: 'Events recorded (created or aggregated into an existing Event), by component, type and reason.',
  labelNames: ['component', 'type', 'reason'],
});
const eventErrors = counter<'component'>({
  name: 'topovol_event_write_errors_total',
  help: 'Events that could not be written to the API server, by component.',
  labelNames: ['component'],
});

const eventsDropped = counter<'component' | 'reason'>({
  name: 'topovol_events_dropped_total',
  help: 'Events not written because their object had too many recently (client-go\'s spam filter: a burst of 25 per object, then one per 5 minutes) or 1,000 were already waiting to be written (client-go\'s queue), by component and reason.',
  labelNames: ['component', 'reason'],
});

/** client-go's EventSourceObjectSpamFilter defaults (tools/record/events_cache.go). */
const SPAM_BURST = 25;
const SPAM_QPS = 1 / 300;

interface Seen {
  namespace: string;
  name: string;
  count: number;
  firstTimestamp: string;
}

const MAX_REMEMBERED = 4096;

/**
 * Events waiting to be written, at most (client-go's maxQueuedEvents): past it they are dropped.
 * Writes share the client's rate limit with the loops, and anyone who can make a loop say
 * something about each of many objects could otherwise queue Events faster than they drain.
 */
export const MAX_PENDING_EVENTS = 1000;

/**
 * client-go tries each Event up to 12 times when the API server fails it (tools/record/event.go,
 * maxTriesPerEvent), so that a busy or restarting API server does not lose the Events that
 * explain what a controller did. The waits here grow from half a second to ten seconds.
 */
export const EVENT_WRITE_TRIES = 12;
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

/**
 * Writes core/v1 Events the way client-go's recorder does: the same event for the same object
 * (reason, message, type) is aggregated into one Event whose count and lastTimestamp grow, instead
 * of a new object each time, and past 10 different messages of one reason within 10 minutes they
 * are combined into one (event-aggregator.ts). Writing never blocks or fails the caller: events
 * are best effort.
 */
export class EventRecorder {
  private readonly seen = new Map<string, Seen>();
  private readonly aggregator: EventAggregator;
  private readonly perObject = new Map<string, TokenBucket>();
  private chain: Promise<void> = Promise.resolve();
  private pendingWrites = 0;
  private readonly log = logger().child({ component: 'event-recorder' });

  constructor(
    private readonly client: KubeClient,
    readonly component: string,
    private readonly host = process.env.HOSTNAME ?? '',
    private readonly dryRun = false,
    private readonly clock: Clock = realClock,
  ) {
    this.aggregator = new EventAggregator(clock, MAX_REMEMBERED);
  }

  /**
   * Records an Event, to be written in the background. False when it was dropped (the per-object
   * spam filter, or too many waiting to be written): a caller that logs what the Event says can log
   * only what is recorded, so that whoever makes it say the same again and again floods neither.
   */
  event(obj: KubeObject, type: EventType, reason: string, message: string): boolean {
    const md = obj.metadata ?? {};
    // Loops that re-sync say the same things again and again: like client-go, a burst per object,
    // then one Event per 5 minutes, so that a waiting object costs the API server almost nothing.
    if (!this.admit([obj.apiVersion, obj.kind, md.namespace, md.name, md.uid].join('\u0000'))) {
      eventsDropped.inc({ component: this.component, reason });
      return false;
    }
    if (!this.dryRun && this.pendingWrites >= MAX_PENDING_EVENTS) {
      eventsDropped.inc({ component: this.component, reason });
      return false;
    }
    eventsTotal.inc({ component: this.component, type, reason });
    this.log.debug('event', { object: `${obj.kind}/${md.namespace ? `${md.namespace}/` : ''}${md.name}`, type, reason, message });
    if (this.dryRun) return true;
    // Only what the Event names is kept while it waits, not the whole object.
    const ref: KubeObject = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: md.name, namespace: md.namespace, uid: md.uid, resourceVersion: md.resourceVersion } };
    this.pendingWrites++;
    // Serialised so that aggregation sees its own earlier writes.
    this.chain = this.chain
      .then(() => this.write(ref, type, reason, message))
      .catch(() => undefined)
      .finally(() => this.pendingWrites--);
    return true;
  }

  /** Events recorded and not yet written. */
  pending(): number {
    return this.pendingWrites;
  }

  eventf(obj: KubeObject, type: EventType, reason: string, fmt: string, ...args: unknown[]): boolean {
    let i = 0;
    return this.event(obj, type, reason, fmt.replace(/%[sdv]/g, () => String(args[i++])));
  }

  /** Resolves once every event recorded so far was written (for shutdown and tests). */
  flush(): Promise<void> {
    return this.chain;
  }

  private async write(obj: KubeObject, type: EventType, reason: string, said: string): Promise<void> {
    const md = obj.metadata ?? {};
    const similar = [md.uid ?? '', obj.apiVersion ?? '', obj.kind ?? '', md.namespace ?? '', md.name ?? '', type, reason].join('\u0000');
    const { message, combined } = this.aggregator.aggregate(similar, said);
    // The Event it aggregates into: the combined one of this object and reason, or its own message's.
    const key = combined ? `${similar}\u0000combined` : `${similar}\u0000${message}`;
    // One name for every try, as client-go's makeEvent: a create that landed though its answer was
    // lost (a timeout, a 504) is found taken by the next try, not written a second time.
    const name = `${obj.metadata?.name ?? 'unknown'}.${Date.now().toString(16)}${randomBytes(2).toString('hex')}`;
    for (let attempt = 1; ; attempt++) {
      const err = await this.writeOnce(obj, type, reason, message, name, attempt > 1, key, combined);
      if (err === undefined) return;
      const c = classifyError(err);
      // A refusal (invalid, forbidden, a name taken) fails the same way again; the rest may pass.
      if (!c.retriable || c.kind === 'Conflict' || attempt >= EVENT_WRITE_TRIES) {
        eventErrors.inc({ component: this.component });
        this.log.warn('cannot write event', { reason, error: errorMessage(err), tries: attempt });
        return;
      }
      const wait = doublingBackoffMs(RETRY_FIRST_MS, attempt, RETRY_MAX_MS);
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, wait));
    }
  }

  /**
   * One try at writing the Event under `name`; resolves with what failed it, if anything. `retry`: a
   * create of it may have landed. `key`: the Event it aggregates into. `combined`: each write
   * replaces its message (client-go's patch carries the message too).
   */
  private async writeOnce(obj: KubeObject, type: EventType, reason: string, message: string, name: string, retry: boolean, key: string, combined: boolean): Promise<unknown> {
    const md = obj.metadata ?? {};
    // Cluster-scoped objects get their events in "default", as client-go does.
    const namespace = md.namespace || 'default';
    const now = new Date().toISOString();
    const prev = this.seen.get(key);
    try {
      if (prev) {
        try {
          const body = { count: prev.count + 1, lastTimestamp: now, ...(combined ? { message: message.slice(0, MESSAGE_MAX_CHARS) } : {}) };
          await this.client.patch<Event>(Resources.events, prev.name, prev.namespace, 'merge', body);
          prev.count++;
          this.remember(key, prev);
          return undefined;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // Expired (events have a TTL): start a new one.
        }
      }
      const ev: Event = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: md.name,
          namespace: md.namespace,
          uid: md.uid,
          resourceVersion: md.resourceVersion,
        },
        reason,
        message: message.slice(0, MESSAGE_MAX_CHARS),
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: this.host ? { component: this.component, host: this.host } : { component: this.component },
        reportingComponent: this.component,
        // As client-go's generateEvent: the instance is the source's host, absent when it has none.
        // (Legal only because no eventTime is set: kube-apiserver requires an instance with one.)
        reportingInstance: this.host || undefined,
      };
      try {
        await this.client.create<Event>(Resources.events, ev);
      } catch (err) {
        // Our earlier try's create landed: written.
        if (!(retry && isAlreadyExists(err))) throw err;
      }
      this.remember(key, { namespace, name, count: 1, firstTimestamp: now });
      return undefined;
    } catch (err) {
      return err;
    }
  }

  private admit(objectKey: string): boolean {
    let bucket = this.perObject.get(objectKey);
    if (bucket) this.perObject.delete(objectKey);
    else bucket = new TokenBucket(SPAM_QPS, SPAM_BURST, this.clock);
    this.perObject.set(objectKey, bucket);
    if (this.perObject.size > MAX_REMEMBERED) this.perObject.delete(this.perObject.keys().next().value!);
    return bucket.tryAccept();
  }

  private remember(key: string, s: Seen): void {
    this.seen.delete(key);
    this.seen.set(key, s);
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value!);
  }
}
