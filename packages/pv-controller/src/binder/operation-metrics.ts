import { performance } from 'node:perf_hooks';
import { ANN_MIGRATED_TO, counter, histogram } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { volumeClass } from './claim-helpers.js';
import { externalProvisionerName } from './csi-migration.js';
import { releaseOf } from './decide-volume.js';
import { deleterProblem } from './reclaim-volume.js';

/**
 * kube-controller-manager's storage operation metrics, under its names and labels, so that
 * dashboards and alerts built on its binder keep working: the end-to-end latency of provisioning
 * (the first time a claim is handed to its provisioner, to its binding) and of deletion (a released
 * `Delete` volume handed to its deleter, to the volume gone), their errors, and the retroactive
 * default class (pkg/controller/volume/persistentvolume/metrics/metrics.go,
 * pkg/volume/util/metrics.go). Timestamps are kept in memory, as upstream's
 * OperationStartTimeCache: an operation that began before a restart is not timed.
 */
const labelNames = ['plugin_name', 'operation_name'] as const;
const latency = histogram<(typeof labelNames)[number]>({
  name: 'volume_operation_total_seconds',
  help: 'Storage operation end to end duration in seconds',
  labelNames,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600],
});
// Its twin volume_operation_total_errors, the only name up to 1.35, is deprecated and hidden in
// kube-controller-manager since 1.36 (an ALPHA metric is hidden in the release that deprecates it;
// kubernetes/kubernetes#136399), so it is not exported here either (docs/divergences.md, "Metrics
// on older releases").
const errors = counter<(typeof labelNames)[number]>({ name: 'volume_operation_errors_total', help: 'Total volume operation errors', labelNames });
const retroactive = counter({ name: 'retroactive_storageclass_total', help: 'Total number of retroactive StorageClass assignments to persistent volume claim' });
const retroactiveErrors = counter({ name: 'retroactive_storageclass_errors_total', help: 'Total number of failed retroactive StorageClass assignments to persistent volume claim' });

/** Upstream's name for a plugin it cannot tell. */
export const PLUGIN_NOT_AVAILABLE = 'N/A';

export type Operation = 'provision' | 'delete';

/** When each operation began, by claim key (provision) or volume name (delete), as upstream keys them. */
export class OperationTimestamps {
  private readonly started = new Map<string, { plugin: string; operation: Operation; at: number }>();

  /** A monotonic clock in ms, as upstream's time.Since: a wall-clock step does not skew a latency. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  addIfNotExist(key: string, plugin: string, operation: Operation): void {
    if (!this.started.has(key)) this.started.set(key, { plugin: plugin || PLUGIN_NOT_AVAILABLE, operation, at: this.now() });
  }

  /** The operation ended (`failed` false: its latency, and it is forgotten) or one of its steps failed (an error; it stays). */
  record(key: string, failed: boolean): void {
    const s = this.started.get(key);
    if (!s) return;
    if (failed) {
      errors.inc({ plugin_name: s.plugin, operation_name: s.operation });
      return;
    }
    latency.observe({ plugin_name: s.plugin, operation_name: s.operation }, Math.max(0, this.now() - s.at) / 1000);
    this.started.delete(key);
  }

  forget(key: string): void {
    this.started.delete(key);
  }

  get size(): number {
    return this.started.size;
  }
}

/** A retroactive default class written to a claim (KEP-3333), or the write that failed. */
export function countRetroactiveClass(ok: boolean): void {
  retroactive.inc();
  if (!ok) retroactiveErrors.inc();
}

/**
 * The provisioner a claim's decision hands it to (upstream's getProvisionerName for an external
 * provisioner: the class's, a migrated in-tree name as its CSI driver's), if the decision does:
 * provisionClaim's ExternalProvisioning Event is that hand-over.
 */
export function provisioningStarted(actions: readonly BinderAction[], claim: PersistentVolumeClaim, sc: StorageClass | undefined): string | undefined {
  const handedOver = actions.some((a) => a.kind === 'event' && a.reason === Reasons.ExternalProvisioning && a.target === claim);
  return handedOver && sc?.provisioner ? externalProvisionerName(sc.provisioner) : undefined;
}

/**
 * The deleter a volume is handed to by this decision, if it is (upstream's reclaimVolume with
 * `Delete`, where its deletion timestamp starts: on the release path only, never for a volume
 * migrated to CSI, whose driver's deleter upstream stands down for): the class's provisioner, as
 * upstream's getProvisionerNameFromVolume names an external one ("N/A" without a class). Volumes
 * this process would mark Failed for want of a deleter (deleterProblem) are not timed: upstream
 * deletes some of them with its in-tree plugins (docs/divergences.md).
 */
export function deleteStarted(volume: PersistentVolume, world: BinderWorld): string | undefined {
  if (volume.spec?.persistentVolumeReclaimPolicy !== 'Delete' || volume.metadata?.annotations?.[ANN_MIGRATED_TO]) return undefined;
  if (!releaseOf(volume, world) || deleterProblem(volume)) return undefined;
  const sc = world.storageClass(volumeClass(volume));
  return sc?.provisioner ? externalProvisionerName(sc.provisioner) : PLUGIN_NOT_AVAILABLE;
}
