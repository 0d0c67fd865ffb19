import { lineSplitter } from './line-splitter.js';
import type { KubeClient } from '../client/kube-client.js';
import { cutManagedFields } from '../client/without-managed-fields.js';
import type { ManagedFieldsCut } from '../client/without-managed-fields.js';
import { ONE_OBJECT_MAX_BYTES } from '../client/paged-list.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: unknown;
}

/**
 * One watch request streamed line by line. Resolves when the server ends the stream (a normal
 * timeout) with the number of events it carried; rejects on transport errors, non-200 answers (as
 * KubeApiError with the Status) and a line that is not an event (as client-go's decoder ends the
 * watch: the caller resumes from the last event it applied, so nothing after it is skipped).
 * ERROR events are passed to the handler like any other: the caller decides (410 means relist).
 * `idleTimeoutMs` bounds the wait for the response's headers too, and every silence after them.
 * With `withoutManagedFields`, an event is parsed without its object's managedFields (as the cut says).
 */
export async function streamWatch(
  client: KubeClient,
  path: string,
  query: Record<string, string>,
  onEvent: (e: WatchEvent) => void,
  signal: AbortSignal,
  idleTimeoutMs: number,
  opts: { withoutManagedFields?: ManagedFieldsCut } = {},
): Promise<number> {
  const ac = new AbortController();
  // Deferred: the caller aborts from inside an event's handler, i.e. from the body's 'data'
  // callback. When the same read also carried the end of the response (the API server sends a
  // 410's ERROR event and closes), aborting there destroyed the socket Node was handing back to
  // its pool, and the AbortError was emitted on it with no listener: the process exited. (The
  // transport now ends aborted requests without that throw too: http-transport.ts, abortError.)
  const onAbort = (): void => void setImmediate(() => ac.abort());
  signal.addEventListener('abort', onAbort);
  let events = 0;
  let undecodable = false;
  let handlerError: unknown;
  let opened = false;
  // A silent peer would stall the informer forever, before the headers (a stalled proxy) as after
  // them (a half-open connection): cut it when nothing, not even a bookmark, arrives for a while.
  let idle: NodeJS.Timeout | undefined = setTimeout(() => ac.abort(), idleTimeoutMs);
  try {
    const body = await client.openStream(path, { ...query, watch: 'true' }, ac.signal);
    opened = true;
    await new Promise<void>((resolve, reject) => {
      const lines = lineSplitter((line) => {
        if (undecodable || handlerError !== undefined) return;
        let e: unknown;
        try {
          e = JSON.parse(cutManagedFields(line, opts.withoutManagedFields));
        } catch {
          e = undefined;
        }
        // JSON that is no event (null, a number, an event without a type or an object) is as
        // undecodable as a broken line: handlers may take e.type and e.object as given.
        if (!isEvent(e)) {
          undecodable = true;
          onAbort();
          return;
        }
        events++;
        // This runs inside the answer's 'data' listener: a throw here would leave the process.
        try {
          onEvent(e);
        } catch (err) {
          handlerError = err;
          onAbort();
        }
      }, { maxLineBytes: ONE_OBJECT_MAX_BYTES, onTooLong: () => ((undecodable = true), onAbort()) });
      body.on('data', (chunk: Buffer) => {
        idle?.refresh();
        lines.push(chunk);
      });
      const finish = (err?: unknown): void => {
        clearTimeout(idle);
        idle = undefined;
        if (handlerError !== undefined) reject(handlerError instanceof Error ? handlerError : new Error('watch event handler failed'));
        else if (undecodable) reject(new Error('watch stream carried a line that is not an event'));
        else if (err && !signal.aborted) reject(err instanceof Error ? err : new Error('watch stream failed'));
        else resolve();
      };
      body.on('error', finish);
      body.on('end', () => {
        lines.end();
        finish();
      });
      body.on('close', () => finish());
      ac.signal.addEventListener('abort', () => finish(signal.aborted ? undefined : new Error('watch idle timeout')));
      if (ac.signal.aborted) finish(signal.aborted ? undefined : new Error('watch idle timeout'));
    });
    return events;
  } catch (err) {
    // Cut before the headers came: the request's own AbortError says less than why it was cut.
    if (!opened && ac.signal.aborted && !signal.aborted) throw new Error(`watch idle timeout (no answer within ${idleTimeoutMs} ms)`, { cause: err });
    throw err;
  } finally {
    clearTimeout(idle);
    signal.removeEventListener('abort', onAbort);
    // Ends the request if it is still open (deferred, as above).
    onAbort();
  }
}

const EVENT_TYPES: ReadonlySet<string> = new Set<WatchEventType>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

/** A watch event as the API server sends one: a known type and an object. */
function isEvent(e: unknown): e is WatchEvent {
  if (typeof e !== 'object' || e === null) return false;
  const { type, object } = e as { type?: unknown; object?: unknown };
  return typeof type === 'string' && EVENT_TYPES.has(type) && typeof object === 'object' && object !== null;
}
