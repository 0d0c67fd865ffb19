import { classifyError } from '../client/errors.js';
import { sleep as realSleep } from '../controller/runnable.js';
import { ReflectorBackoff } from './reflector-backoff.js';

/** A watch shorter than this without an event is followed by the first backoff step (client-go's reflector: 1 s). */
const SHORT_WATCH_MS = 1_000;

/** How one watch ended: closed (by the server's timeout, a proxy, a cut), or followed by a list (why: our resourceVersion too old, 'gone', or another error event, 'error'). */
export type WatchOutcome = { kind: 'closed'; events: number } | { kind: 'relist'; why: 'gone' | 'error' };

/** One informer's list and watch, and what it is told of the loop's restarts and failures. */
export interface ListWatchSteps {
  backoff?: { startMs?: number; maxMs?: number };
  /** Tests' clock: the time now and a wait (default Date.now and a timer). */
  clock?: { now(): number; sleep(ms: number, signal: AbortSignal): Promise<void> };
  /** Tests' jitter, in [0, 1) (default Math.random). */
  random?: () => number;
  /** Whether a list was asked for (relist()); asking clears the request. */
  takeRelistRequest(): boolean;
  /** Whether a list was asked for, without clearing the request. */
  relistRequested(): boolean;
  /** The last list or watch was cut on purpose (relist(), a raw observer): go on at once, no failure. */
  interrupted(): boolean;
  list(signal: AbortSignal): Promise<void>;
  watch(signal: AbortSignal): Promise<WatchOutcome>;
  restarted(reason: 'gone' | 'error' | 'timeout'): void;
  failed(kind: string, message: string, retryInMs: number): void;
}

/**
 * Lists, then watches from the list's resourceVersion, until `signal` aborts; never gives up. A watch
 * that ends is opened again from the last resourceVersion; one that must be followed by a list, or a
 * failed list or watch, waits a backoff step first, growing while they repeat (client-go's reflector's
 * backoff manager, ReflectorBackoff): a server or proxy answering every watch with 410 or every
 * request with an error gets neither a full list nor a request in a loop.
 */
export async function runListWatch(signal: AbortSignal, steps: ListWatchSteps): Promise<void> {
  const now = steps.clock?.now.bind(steps.clock) ?? Date.now;
  const sleep = steps.clock?.sleep.bind(steps.clock) ?? realSleep;
  const backoff = new ReflectorBackoff({ startMs: steps.backoff?.startMs, maxMs: steps.backoff?.maxMs, now, random: steps.random });
  let needList = true;
  while (!signal.aborted) {
    try {
      if (steps.takeRelistRequest()) needList = true;
      if (needList) {
        await steps.list(signal);
        needList = false;
        // A relist asked for while this one was under way needs a list asked for after it.
        if (steps.relistRequested()) continue;
      }
      const started = now();
      const outcome = await steps.watch(signal);
      if (steps.interrupted()) {
        // A list was due all the same: list, whatever ended it.
        if (outcome.kind === 'relist') needList = true;
        continue;
      }
      if (outcome.kind === 'relist') {
        needList = true;
        steps.restarted(outcome.why);
        await sleep(backoff.next(), signal);
        continue;
      }
      // A watch that ends at once with nothing in it, as client-go's reflector's "very short
      // watch": waits the first backoff step, not a growing one (a growing backoff here was seen
      // to leave a new informer blind for a minute on a busy API server), so a proxy that closes
      // every watch costs a few requests a second, not thousands.
      if (outcome.events === 0 && now() - started < SHORT_WATCH_MS) await sleep(backoff.startMs, signal);
      steps.restarted('timeout');
    } catch (err) {
      if (signal.aborted) break;
      // Cut before its answer came by relist() or a raw observer: no failure.
      if (steps.interrupted()) continue;
      const c = classifyError(err);
      if (c.kind === 'Gone') needList = true;
      steps.restarted(c.kind === 'Gone' ? 'gone' : 'error');
      const wait = Math.max(backoff.next(), (c.retryAfterSeconds ?? 0) * 1000);
      steps.failed(c.kind, c.message, Math.round(wait));
      await sleep(wait, signal);
    }
  }
}
