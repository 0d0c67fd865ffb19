import { eventually } from './eventually.js';
import { metricSum } from './metric-sum.js';

/**
 * Resolves once the in-process work queue `name` holds no key and no worker is processing one, on
 * two reads a little apart (a handler may queue a key just after the first): the anchor for a check
 * that something did not happen, so that it runs after the loop has decided on what it was given,
 * not a fixed time after the test's trigger. Keys waiting out a delay (requeue-after, backoff) are
 * not counted: a check anchored here says what the loop did when it last looked.
 */
export async function queueIdle(name: string, timeoutMs = 30_000): Promise<void> {
  const idle = async (): Promise<boolean> => (await metricSum('workqueue_depth', { name })) === 0 && (await metricSum('workqueue_unfinished_work_seconds', { name })) === 0;
  await eventually(async () => {
    if (!(await idle())) throw new Error(`work queue ${name} is busy`);
    await new Promise((r) => setTimeout(r, 200));
    if (!(await idle())) throw new Error(`work queue ${name} is busy`);
  }, timeoutMs);
}
