import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { parsePrometheusText } from '@topovol/testing';
import { UNKNOWN_CLASS_LABEL } from '../../../src/binder/binder-metrics.js';

/** The series compared: kube-controller-manager's persistentvolume binder's collector gauges. */
export const COLLECTOR_GAUGES = ['pv_collector_bound_pv_count', 'pv_collector_unbound_pv_count', 'pv_collector_total_pv_count', 'pv_collector_bound_pvc_count', 'pv_collector_unbound_pvc_count'];

/** A series as one string: its name and its labels sorted, e.g. `pv_collector_bound_pv_count{storage_class="x"}`. */
export type Series = string;

function seriesKey(name: string, labels: Record<string, string>): Series {
  const body = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
  return `${name}{${body}}`;
}

/** The collector gauges of a /metrics body, series to value; series of value 0 are left out. */
export function collectorGauges(text: string): Map<Series, number> {
  const out = new Map<Series, number>();
  for (const s of parsePrometheusText(text)) if (COLLECTOR_GAUGES.includes(s.name) && s.value !== 0) out.set(seriesKey(s.name, s.labels), s.value);
  return out;
}

/**
 * What kube-controller-manager's collector reports for these objects, written from its source
 * (pvCollect and pvcCollect in pkg/controller/volume/persistentvolume/metrics/metrics.go): a volume
 * is bound iff its phase is Bound and is labelled with spec.storageClassName (no annotation); its
 * plugin is one the binder probes (hostPath, NFS), else "N/A"; a claim is bound iff its phase is
 * Bound and is labelled with its class (the beta annotation first) and its volume attributes
 * class. The suite checks this model against the real kube-controller-manager's scrape, so it is
 * an oracle and not a copy of Topovol's code. `classExists`: map claims' classes no StorageClass
 * has to Topovol's `<unknown>` (docs/divergences.md, the storage_class label of claim metrics).
 */
export function expectedCollectorGauges(volumes: PersistentVolume[], claims: PersistentVolumeClaim[], classExists?: (name: string) => boolean): Map<Series, number> {
  const out = new Map<Series, number>();
  const add = (name: string, labels: Record<string, string>): void => {
    const k = seriesKey(name, labels);
    out.set(k, (out.get(k) ?? 0) + 1);
  };
  for (const v of volumes) {
    const plugin = v.spec?.hostPath ? 'kubernetes.io/host-path' : v.spec?.nfs ? 'kubernetes.io/nfs' : 'N/A';
    add('pv_collector_total_pv_count', { plugin_name: plugin, volume_mode: v.spec?.volumeMode ?? 'Filesystem' });
    add(v.status?.phase === 'Bound' ? 'pv_collector_bound_pv_count' : 'pv_collector_unbound_pv_count', { storage_class: v.spec?.storageClassName ?? '' });
  }
  for (const c of claims) {
    const named = c.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? c.spec?.storageClassName ?? '';
    const cls = classExists && named !== '' && !classExists(named) ? UNKNOWN_CLASS_LABEL : named;
    add(c.status?.phase === 'Bound' ? 'pv_collector_bound_pvc_count' : 'pv_collector_unbound_pvc_count', {
      namespace: c.metadata?.namespace ?? '',
      storage_class: cls,
      volume_attributes_class: c.spec?.volumeAttributesClassName ?? '',
    });
  }
  return out;
}

/** The series whose values differ, as readable lines (`series: got X, want Y`), sorted. */
export function gaugeDiff(got: Map<Series, number>, want: Map<Series, number>): string[] {
  const keys = [...new Set([...got.keys(), ...want.keys()])].sort();
  return keys.filter((k) => got.get(k) !== want.get(k)).map((k) => `${k}: got ${got.get(k) ?? 'none'}, want ${want.get(k) ?? 'none'}`);
}

/**
 * Counts that depend only on what ended how, not on timing: provisionings and deletions timed to
 * their end (volume_operation_total_seconds' count, by plugin and operation; upstream counts an
 * operation there only when it succeeded) and retroactive class assignments that succeeded
 * (retroactive_storageclass_total counts every attempt, so its errors are taken off). Failures
 * are not compared: a write that lost a race fails on one side only.
 */
export function outcomeCounters(text: string): Map<Series, number> {
  const out = new Map<Series, number>();
  let retroactive = 0;
  for (const s of parsePrometheusText(text)) {
    if (s.name === 'volume_operation_total_seconds_count') out.set(seriesKey(s.name, s.labels), s.value);
    if (s.name === 'retroactive_storageclass_total') retroactive += s.value;
    if (s.name === 'retroactive_storageclass_errors_total') retroactive -= s.value;
  }
  out.set('retroactive_storageclass_total - retroactive_storageclass_errors_total', retroactive);
  return out;
}

/** after − before, per series; series that did not move are left out. */
export function counterDelta(before: Map<Series, number>, after: Map<Series, number>): Map<Series, number> {
  const out = new Map<Series, number>();
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) !== 0) out.set(k, v - (before.get(k) ?? 0));
  return out;
}
