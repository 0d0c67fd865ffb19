import { counter, exponentialBuckets, gauge, histogram } from '../metrics/registry.js';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { Clock } from '../ratelimit/clock.js';

// A work queue's Prometheus series, under client-go's workqueue metric names
// (k8s.io/client-go/util/workqueue/metrics.go).

const UNFINISHED_UPDATE_PERIOD_MS = 500;

interface Families {
  depth: Gauge<'name'>;
  adds: Counter<'name'>;
  queueDuration: Histogram<'name'>;
  workDuration: Histogram<'name'>;
  retries: Counter<'name'>;
  unfinished: Gauge<'name'>;
  longest: Gauge<'name'>;
}

// Queues whose adds, depth and in-flight gauges must be published; also published on every scrape
// (collect), so a scrape never reports values up to one update period stale.
const liveMetrics = new Set<{ refresh(): void }>();
const refreshLive = (): void => {
  for (const m of liveMetrics) m.refresh();
};

let families: Families | undefined;

// Created on first use, so a process that never builds a queue exports no empty families.
function metricFamilies(): Families {
  const buckets = exponentialBuckets(1e-8, 10, 10);
  const labelNames = ['name'] as const;
  families ??= {
    depth: gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames, collect: refreshLive }),
    adds: counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames, collect: refreshLive }),
    queueDuration: histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames,
      buckets,
    }),
    workDuration: histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames,
      buckets,
    }),
    retries: counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames }),
    unfinished: gauge({
      name: 'workqueue_unfinished_work_seconds',
      help:
        'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration. ' +
        'Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.',
      labelNames,
      collect: refreshLive,
    }),
    longest: gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames,
      collect: refreshLive,
    }),
  };
  return families;
}

/** One queue's series: remembers when keys were added and taken, to observe the durations. */
export class QueueMetrics<K> {
  private readonly f = metricFamilies();
  private readonly labels: { name: string };
  private readonly addTimes = new Map<K, number>();
  private readonly startTimes = new Map<K, number>();
  private ticker: NodeJS.Timeout | undefined;
  // Adds are counted here, and they and the depth published on every scrape and tick (refresh):
  // a prom-client update hashes its labels, and an informer's start-up list of 100,000 objects
  // adds as many keys in one go (hack/bench/README.md, "Start-up at 100,000").
  private unpublishedAdds = 0;

  constructor(
    name: string,
    private readonly clock: Clock,
    /** The queue's depth now (keys needing work). */
    private readonly depth: () => number,
  ) {
    this.labels = { name };
    // Publish zeros right away, so dashboards see the queue before its first add.
    this.f.depth.set(this.labels, 0);
    this.f.adds.inc(this.labels, 0);
    this.f.retries.inc(this.labels, 0);
    this.f.unfinished.set(this.labels, 0);
    this.f.longest.set(this.labels, 0);
    this.f.queueDuration.zero(this.labels);
    this.f.workDuration.zero(this.labels);
    liveMetrics.add(this);
    // Unref'd: metrics alone must not keep the process alive.
    this.ticker = setInterval(() => this.refresh(), UNFINISHED_UPDATE_PERIOD_MS).unref();
  }

  added(key: K): void {
    this.unpublishedAdds++;
    if (!this.addTimes.has(key)) this.addTimes.set(key, this.clock.now());
  }

  taken(key: K): void {
    const now = this.clock.now();
    const added = this.addTimes.get(key);
    if (added !== undefined) {
      this.f.queueDuration.observe(this.labels, (now - added) / 1000);
      this.addTimes.delete(key);
    }
    this.startTimes.set(key, now);
  }

  done(key: K): void {
    const started = this.startTimes.get(key);
    if (started === undefined) return;
    this.f.workDuration.observe(this.labels, (this.clock.now() - started) / 1000);
    this.startTimes.delete(key);
  }

  /** The queued keys were dropped (hold): none of them will be taken. */
  dropped(): void {
    this.addTimes.clear();
  }

  retried(): void {
    this.f.retries.inc(this.labels);
  }

  /** Publishes what is counted or read rather than sent per event: adds, depth, and the in-flight gauges. */
  refresh(): void {
    if (this.unpublishedAdds > 0) this.f.adds.inc(this.labels, this.unpublishedAdds);
    this.unpublishedAdds = 0;
    this.f.depth.set(this.labels, this.depth());
    const now = this.clock.now();
    let total = 0;
    let longest = 0;
    for (const started of this.startTimes.values()) {
      const s = Math.max(0, now - started) / 1000;
      total += s;
      longest = Math.max(longest, s);
    }
    this.f.unfinished.set(this.labels, total);
    this.f.longest.set(this.labels, longest);
  }

  /** The queue is shut down and idle: publish the final (zero) in-flight values and stop updating. */
  stop(): void {
    if (this.ticker === undefined) return;
    clearInterval(this.ticker);
    this.ticker = undefined;
    liveMetrics.delete(this);
    this.refresh();
  }
}
