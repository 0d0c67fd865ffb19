import { ANN_SELECTED_NODE, counter, gauge, histogram } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { claimClass } from './claim-helpers.js';
import { PLUGIN_NOT_AVAILABLE } from './operation-metrics.js';

interface CollectorSource {
  volumes: () => PersistentVolume[];
  claims: () => PersistentVolumeClaim[];
  classExists: (name: string) => boolean;
}

/** The storage_class label of a claim whose class no StorageClass has (see claimClassLabel). */
export const UNKNOWN_CLASS_LABEL = '<unknown>';

/**
 * A claim's class as a label value: its class if a StorageClass of that name exists (or "", no
 * class), else UNKNOWN_CLASS_LABEL. A tenant chooses the class name, in the spec or in the
 * unvalidated beta annotation (up to 512 characters cached), so the label would otherwise take as
 * many values as the tenant has claims (kube-controller-manager's pv_collector does take them).
 */
export function claimClassLabel(c: PersistentVolumeClaim, classExists: (name: string) => boolean): string {
  const cls = claimClass(c);
  return cls === '' || classExists(cls) ? cls : UNKNOWN_CLASS_LABEL;
}
// The binder whose caches the gauges report: the latest one set up in this process (one in a
// manager; tests start several in turn, and the gauges must follow the running one).
let source: CollectorSource | undefined;

// Upstream's collector names (pkg/controller/volume/persistentvolume/metrics), computed from the
// caches at scrape time as upstream does, so they are never out of step with what we see.
export function registerCollectorMetrics(volumes: () => PersistentVolume[], claims: () => PersistentVolumeClaim[], classExists: (name: string) => boolean): void {
  source = { volumes, claims, classExists };
  // prom-client calls collect() on every scrape; the first gauge refreshes them all.
  const boundPV = gauge<'storage_class'>({
    name: 'pv_collector_bound_pv_count',
    help: 'Gauge measuring number of persistent volume currently bound',
    labelNames: ['storage_class'],
    collect: () => refresh(),
  });
  const unboundPV = gauge<'storage_class'>({ name: 'pv_collector_unbound_pv_count', help: 'Gauge measuring number of persistent volume currently unbound', labelNames: ['storage_class'] });
  const totalPV = gauge<'plugin_name' | 'volume_mode'>({ name: 'pv_collector_total_pv_count', help: 'Gauge measuring total number of persistent volumes', labelNames: ['plugin_name', 'volume_mode'] });
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
  // For the "claims Pending with a selected node" alert: the scheduler chose a node and nothing has
  // provisioned or bound since. Age is counted from the claim's creation (the annotation carries no time).
  const waiting = gauge<'storage_class'>({
    name: 'topovol_pv_binder_selected_node_pending_claims',
    help: `Claims Pending with ${ANN_SELECTED_NODE} set (waiting for provisioning), by storage class.`,
    labelNames: ['storage_class'],
  });
  const oldest = gauge<'storage_class'>({
    name: 'topovol_pv_binder_selected_node_pending_oldest_seconds',
    help: `Age (since creation) of the oldest claim Pending with ${ANN_SELECTED_NODE}, by storage class.`,
    labelNames: ['storage_class'],
  });
  function refresh(): void {
    boundPV.reset();
    unboundPV.reset();
    totalPV.reset();
    boundPVC.reset();
    unboundPVC.reset();
    waiting.reset();
    oldest.reset();
    if (!source) return;
    const now = Date.now();
    const oldestByClass = new Map<string, number>();
    for (const c of source.claims()) {
      if (c.status?.phase === 'Bound' || !c.metadata?.annotations?.[ANN_SELECTED_NODE]) continue;
      const cls = claimClassLabel(c, source.classExists);
      waiting.inc({ storage_class: cls });
      const created = Date.parse(c.metadata.creationTimestamp ?? '');
      if (!Number.isNaN(created)) oldestByClass.set(cls, Math.max(oldestByClass.get(cls) ?? 0, (now - created) / 1000));
    }
    for (const [cls, age] of oldestByClass) oldest.set({ storage_class: cls }, age);
    for (const v of source.volumes()) {
      // spec.storageClassName only, as upstream's pvCollect: not the beta annotation binding reads.
      (v.status?.phase === 'Bound' ? boundPV : unboundPV).inc({ storage_class: v.spec?.storageClassName ?? '' });
      // The API server defaults volumeMode to Filesystem.
      totalPV.inc({ plugin_name: collectorPluginName(v), volume_mode: v.spec?.volumeMode ?? 'Filesystem' });
    }
    for (const c of source.claims()) {
      const labels = { namespace: c.metadata?.namespace ?? '', storage_class: claimClassLabel(c, source.classExists), volume_attributes_class: c.spec?.volumeAttributesClassName ?? '' };
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
  help: 'Bind attempts by outcome: bound, conflict (lost a race, retried), error; taken_back: a volume bound for a claim the server then showed gone, created again, bound elsewhere or being deleted, made Available again.',
  labelNames: ['result'],
});

export function observeBind(mode: string, seconds: number): void {
  bindDuration.observe({ mode }, seconds);
}

export function countBind(result: 'bound' | 'conflict' | 'error' | 'taken_back'): void {
  binds.inc({ result });
}

/** What a live read before a guarded write confirms (verify-on-server.ts). */
export type ServerCheck = 'release' | 'selected_node' | 'placed_pod' | 'lost' | 'take_back' | 'deleting_claim';

const refuted = counter<'check'>({
  name: 'topovol_pv_binder_refuted_by_server_total',
  help: "Writes the binder planned on its caches and did not send because the server's objects refuted them (verify-on-server): release (the claim still exists), selected_node (the node, a pod or the provisioner's activity), placed_pod (the pod gone or moved), lost (the claim's volume is there), take_back (the claim of an unfinished binding still waits for its volume), deleting_claim (no pod on a node uses a claim being deleted that a free volume was to be bound to). A steady rise means the caches lag the server.",
  labelNames: ['check'],
});

export function countRefuted(check: ServerCheck): void {
  refuted.inc({ check });
}

/**
 * A volume's plugin as kube-controller-manager's pv_collector_total_pv_count names it: its binder
 * probes only the in-tree plugins that provision, delete or recycle (hostpath, nfs;
 * ProbeProvisionableRecyclableVolumePlugins in cmd/kube-controller-manager/app/plugins.go), so every
 * other volume, CSI ones included, is "N/A".
 */
export function collectorPluginName(v: PersistentVolume): string {
  if (v.spec?.hostPath) return 'kubernetes.io/host-path';
  if (v.spec?.nfs) return 'kubernetes.io/nfs';
  return PLUGIN_NOT_AVAILABLE;
}
