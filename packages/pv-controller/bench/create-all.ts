import { performance } from 'node:perf_hooks';
import { classifyError, isAlreadyExists } from '@topovol/shared';
import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';

const MAX_ATTEMPTS = 6;

/**
 * Creates objects 0..count-1 with at most `inFlight` requests outstanding, as fast as the API
 * server answers; calls onCreated with the monotonic time of each create response. Transient
 * failures (429, 5xx, timeouts) are retried; AlreadyExists after a retry means the first try won.
 */
export async function createAll(
  client: KubeClient,
  resource: ResourceType,
  count: number,
  inFlight: number,
  make: (i: number) => KubeObject,
  onCreated: (obj: KubeObject, at: number) => void,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const obj = make(i);
      for (let attempt = 1; ; attempt++) {
        try {
          await client.create(resource, obj);
          onCreated(obj, performance.now());
          break;
        } catch (err) {
          if (attempt > 1 && isAlreadyExists(err)) {
            onCreated(obj, performance.now());
            break;
          }
          const c = classifyError(err);
          if (!c.retriable || attempt >= MAX_ATTEMPTS) throw new Error(`create ${resource.kind} ${obj.metadata?.name}: ${c.message}`);
          await new Promise((r) => setTimeout(r, Math.max(100 * 2 ** attempt, (c.retryAfterSeconds ?? 0) * 1000)));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}
