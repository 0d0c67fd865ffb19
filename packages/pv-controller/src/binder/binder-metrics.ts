import { counter, gauge, histogram } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimClass, volumeClass } from './claim-helpers.js';

interface CollectorSource {
  volumes: () => PersistentVolume[];
  claims: () => PersistentVolumeClaim[];
}
// The binder whose caches the gauges report: the latest one set up in this process (one in a
// manager; tests start several in turn, and the gauges must follow the running one).
let source: CollectorSource | undefined;

// Upstream's collector names (pkg/controller/volume/persistentvolume/metrics), computed from the
// caches at scrape time as upstream does, so they are never out of step with what we see.
export function registerCollectorMetrics(volumes: () => PersistentVolume[], claims: () => PersistentVolumeClaim[]): void {
  source = { volumes, claims };
  // prom-client calls collect() on every scrape; the first gauge refreshes all four.
  const boundPV = gauge<'storage_class'>({
    name: 'pv_collector_bound_pv_count',
    help: 'Gauge measuring number of persistent volume currently bound',
    labelNames: ['storage_class'],
    collect: () => refresh(),
  });
  const unboundPV = gauge<'storage_class'>({ name: 'pv_collector_unbound_pv_count', help: 'Gauge measuring number of persistent volume currently unbound', labelNames: ['storage_class'] });
  const boundPVC = gauge<'namespace' | 'storage_class' | 'volume_attributes_class'>({
    name: 'pv_collector_bound_pvc_count',
    help: 'Gauge measuring number of persistent volume claim currently bound',
    labelNames: ['namespace', 'storage_class', 'volume_attributes_class'],
  });
  const unboundPVC = gauge<'namespace' | 'storage_class' | 'volume_attributes_class'>({
    name: 'pv_collector_unbound_pvc_count',
    help: 'Gauge measuring number of persistent volume claim currently unbound',
    labelNames: ['namespace', 'storage_class', 'volume_attributes_class'],
  });
  function refresh(): void {
    boundPV.reset();
    unboundPV.reset();
    boundPVC.reset();
    unboundPVC.reset();
    if (!source) return;
    for (const v of source.volumes()) (v.status?.phase === 'Bound' ? boundPV : unboundPV).inc({ storage_class: volumeClass(v) });
    for (const c of source.claims()) {
      const labels = { namespace: c.metadata?.namespace ?? '', storage_class: claimClass(c), volume_attributes_class: c.spec?.volumeAttributesClassName ?? '' };
      (c.status?.phase === 'Bound' ? boundPVC : unboundPVC).inc(labels);
    }
  }
}

const bindDuration = histogram<'mode'>({
  name: 'topovol_pv_binder_claim_bind_duration_seconds',
  help: 'Time from claim creation (or, for delayed binding, from selected-node or pre-binding) to Bound, by binding mode (Immediate, WaitForFirstConsumer).',
  labelNames: ['mode'],
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
});

const binds = counter<'result'>({
  name: 'topovol_pv_binder_binds_total',
  help: 'Bind attempts by outcome: bound, conflict (lost a race, retried), error.',
  labelNames: ['result'],
});

export function observeBind(mode: string, seconds: number): void {
  bindDuration.observe({ mode }, seconds);
}

export function countBind(result: 'bound' | 'conflict' | 'error'): void {
  binds.inc({ result });
}
