import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CounterConfiguration, GaugeConfiguration, HistogramConfiguration } from 'prom-client';

/**
 * The process-wide Prometheus registry. Private (not prom-client's global one) so that a library
 * embedding Topovol cannot collide with it; served by the metrics endpoint.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

// What nodejs_heap_size_used_bytes is to be read against. Node sizes the heap from the container's
// memory limit, at about half of it, and exits ("JavaScript heap out of memory") at this bound
// while the container's working set is still well below its limit (docs/install.md, "Memory and CPU").
new Gauge({
  name: 'topovol_heap_limit_bytes',
  help: "V8's heap size limit: the process exits when its heap reaches it. Node sets it to about half the container's memory limit unless --max-old-space-size says otherwise.",
  registers: [metricsRegistry],
  collect() {
    this.set(getHeapStatistics().heap_size_limit);
  },
});

// Metric families are created once per process and shared by every instance that labels them
// (as client-go's global metrics providers do), so creating two queues or two controllers never
// fails with "metric already registered".
export function counter<T extends string>(cfg: Omit<CounterConfiguration<T>, 'registers'>): Counter<T> {
  const existing = metricsRegistry.getSingleMetric(cfg.name);
  if (existing) return existing as Counter<T>;
  return new Counter<T>({ ...cfg, registers: [metricsRegistry] });
}

export function gauge<T extends string>(cfg: Omit<GaugeConfiguration<T>, 'registers'>): Gauge<T> {
  const existing = metricsRegistry.getSingleMetric(cfg.name);
  if (existing) return existing as Gauge<T>;
  return new Gauge<T>({ ...cfg, registers: [metricsRegistry] });
}

export function histogram<T extends string>(cfg: Omit<HistogramConfiguration<T>, 'registers'>): Histogram<T> {
  const existing = metricsRegistry.getSingleMetric(cfg.name);
  if (existing) return existing as Histogram<T>;
  return new Histogram<T>({ ...cfg, registers: [metricsRegistry] });
}

/** Exponential bucket boundaries, as prometheus.ExponentialBuckets in client_golang. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, v = start; i < count; i++, v *= factor) out.push(v);
  return out;
}
