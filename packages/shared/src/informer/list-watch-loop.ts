import { classifyError } from '../client/errors.js';
import { sleep } from '../controller/runnable.js';

const BACKOFF_START_MS = 800;
const BACKOFF_MAX_MS = 10_000;
/** A watch shorter than this without an event is followed by a backoff step (client-go's reflector: 1 s). */
const SHORT_WATCH_MS = 1_000;
/** A watch that lasted longer than this starts the backoff afresh. */
const HEALTHY_WATCH_MS = 30_000;

/** How one watch ended: closed (by the server's timeout, a proxy, a cut), or followed by a list (why: our resourceVersion too old, 'gone', or another error event, 'error'). */
export type WatchOutcome = { kind: 'closed'; events: number } | { kind: 'relist'; why: 'gone' | 'error' };

/** One informer's list and watch, and what it is told of the loop's restarts and failures. */
export interface ListWatchSteps {
  backoff?: { startMs?: number; maxMs?: number };
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
 * backoff manager): a server or proxy answering every watch with 410 or every request with an error
 * gets neither a full list nor a request in a loop.
 */
export async function runListWatch(signal: AbortSignal, steps: ListWatchSteps): Promise<void> {
  const start = steps.backoff?.startMs ?? BACKOFF_START_MS;
  const max = steps.backoff?.maxMs ?? BACKOFF_MAX_MS;
  let backoff = start;
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
      const started = Date.now();
      const outcome = await steps.watch(signal);
      if (steps.interrupted()) {
        // A list was due all the same: list, whatever ended it.
        if (outcome.kind === 'relist') needList = true;
        continue;
      }
      if (Date.now() - started > HEALTHY_WATCH_MS) backoff = start;
      if (outcome.kind === 'relist') {
        needList = true;
        steps.restarted(outcome.why);
        await sleep(backoff * (1 + Math.random()), signal);
        backoff = Math.min(backoff * 2, max);
        continue;
      }
      // A watch that ends at once with nothing in it, as client-go's reflector's "very short
      // watch": waits the first backoff step, not a growing one (a growing backoff here was seen
      // to leave a new informer blind for a minute on a busy API server), so a proxy that closes
      // every watch costs a few requests a second, not thousands.
      if (outcome.events === 0 && Date.now() - started < SHORT_WATCH_MS) await sleep(start, signal);
      steps.restarted('timeout');
      backoff = start;
    } catch (err) {
      if (signal.aborted) break;
      // Cut before its answer came by relist() or a raw observer: no failure.
      if (steps.interrupted()) continue;
      const c = classifyError(err);
      if (c.kind === 'Gone') needList = true;
      steps.restarted(c.kind === 'Gone' ? 'gone' : 'error');
      const wait = Math.max(backoff * (1 + Math.random()), (c.retryAfterSeconds ?? 0) * 1000);
      steps.failed(c.kind, c.message, Math.round(wait));
      await sleep(wait, signal);
      backoff = Math.min(backoff * 2, max);
    }
  }
}
