import { Controller } from '../../src/controller/controller.js';
import type { ReconcileFunc } from '../../src/controller/controller.js';
import { DONE } from '../../src/controller/result.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import type { FakeClock } from '../../src/ratelimit/clock.js';
import type { RateLimiter } from '../../src/ratelimit/item-backoff.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';

// What the controller runner's unit tests share: one name counter for the whole process, so the
// metric series of controllers made in different files never meet.

let n = 0;
export const unique = (p: string): string => `${p}-${++n}`;

/** A gauge's or counter's series with these labels, or undefined when there is none. */
export async function metricSeries(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = await metricsRegistry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

/** As metricSeries, with 0 for a series not yet published. */
export async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return (await metricSeries(name, labels)) ?? 0;
}

/** Lets pending promise callbacks (workers) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

/** A controller on string keys with its own queue, as a loop's setup builds them; named unique(prefix). */
export function stringController(
  prefix: string,
  reconcile: ReconcileFunc<string>,
  opts: { clock?: FakeClock; rateLimiter?: RateLimiter<string>; workers?: number } = {},
): Controller<string> {
  const name = unique(prefix);
  const queue = new WorkQueue<string>(name, { ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}) });
  // workers passed as given, 0 and negative too: how the runner reads them is under test.
  return new Controller<string>(name, reconcile, { queue, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.workers !== undefined ? { workers: opts.workers } : {}) });
}

/** A string-keyed controller whose reconciles record `<fake time>:<key>` in `seen`. */
export function recordingController(prefix: string, clock: FakeClock): { c: Controller<string>; seen: string[] } {
  const seen: string[] = [];
  const c = stringController(
    prefix,
    (_ctx, key) => {
      seen.push(`${clock.now()}:${key}`);
      return Promise.resolve(DONE);
    },
    { clock },
  );
  return { c, seen };
}
