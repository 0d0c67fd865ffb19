import { metricsRegistry } from '@topovol/shared';

/**
 * The sum of a metric's series in this process whose labels include `labels` (0 when none): for
 * tests that run a loop in-process. Reading it runs the metric's collect, so values published on
 * scrape (the work queue's adds) are current.
 */
export async function metricSum(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = metricsRegistry.getSingleMetric(name);
  if (!m) return 0;
  const { values } = await m.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}
