import { lineSplitter } from './line-splitter.js';
import type { KubeClient } from '../client/kube-client.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: unknown;
}

/**
 * One watch request streamed line by line. Resolves when the server ends the stream (a normal
 * timeout); rejects on transport errors and non-200 answers (as KubeApiError with the Status).
 * ERROR events are passed to the handler like any other: the caller decides (410 means relist).
 */
export async function streamWatch(
  client: KubeClient,
  path: string,
  query: Record<string, string>,
  onEvent: (e: WatchEvent) => void,
  signal: AbortSignal,
  idleTimeoutMs: number,
): Promise<void> {
  const ac = new AbortController();
  const onAbort = (): void => ac.abort();
  signal.addEventListener('abort', onAbort);
  try {
    const body = await client.openStream(path, { ...query, watch: 'true' }, ac.signal);
    await new Promise<void>((resolve, reject) => {
      // A silent half-open connection would stall the informer forever: cut it when nothing,
      // not even a bookmark, arrives for a while.
      const idle = setTimeout(() => ac.abort(), idleTimeoutMs);
      const lines = lineSplitter((line) => {
        let e: WatchEvent;
        try {
          e = JSON.parse(line) as WatchEvent;
        } catch {
          return;
        }
        onEvent(e);
      });
      body.on('data', (chunk: Buffer) => {
        idle.refresh();
        lines.push(chunk);
      });
      const finish = (err?: unknown): void => {
        clearTimeout(idle);
        if (err && !signal.aborted) reject(err instanceof Error ? err : new Error('watch stream failed'));
        else resolve();
      };
      body.on('error', finish);
      body.on('end', () => {
        lines.end();
        finish();
      });
      body.on('close', () => finish());
      ac.signal.addEventListener('abort', () => finish(signal.aborted ? undefined : new Error('watch idle timeout')));
    });
  } finally {
    signal.removeEventListener('abort', onAbort);
    ac.abort();
  }
}
