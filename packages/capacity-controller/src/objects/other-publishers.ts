import { errorMessage, gauge, LABEL_CSI_DRIVER_NAME, LABEL_CSI_MANAGED_BY, oncePerTurn, runnableFunc, sleep } from '@topovol/shared';
import type { CSIStorageCapacity, KubeObject, Logger, Runnable } from '@topovol/shared';
import type { CapacityEvents, InformerView } from '../capacity-loop-deps.js';
import { ProblemReporter } from '../problem-reporter.js';
import { fnv1a32Hex } from '../status/status-shards.js';
import { LABEL_VALUE_MAX } from './managed-by.js';
import type { StatusCondition } from '../status/index.js';
import type { Problem } from '../problem-reporter.js';

/** external-provisioner's managed-by value (cmd/csi-provisioner/csi-provisioner.go); with --node-deployment, "-<node>" follows. */
export const EXTERNAL_PROVISIONER = 'external-provisioner';

/**
 * external-provisioner's managed-by value on `nodeName` with --node-deployment: "external-provisioner-<node>",
 * or, past 63 characters, the shortened form of its getNameWithMaxLength (cmd/csi-provisioner/util.go,
 * identical since v5.3.0): the base cut short, an 8-digit FNV-1a hash, then the node; or, for a
 * node name too long to keep, the base and a hash of the whole. Node names are ASCII, so lengths in
 * characters are Go's lengths in bytes.
 */
export function externalProvisionerManagedBy(nodeName: string): string {
  const name = `${EXTERNAL_PROVISIONER}-${nodeName}`;
  if (name.length <= LABEL_VALUE_MAX) return name;
  const baseLength = LABEL_VALUE_MAX - 10 - nodeName.length;
  if (baseLength <= 0) return `${EXTERNAL_PROVISIONER.slice(0, LABEL_VALUE_MAX - 9)}-${fnv1a32Hex(name)}`.slice(0, LABEL_VALUE_MAX);
  return `${EXTERNAL_PROVISIONER.slice(0, baseLength)}-${fnv1a32Hex(EXTERNAL_PROVISIONER)}-${nodeName}`;
}

export const OTHER_PUBLISHER_REASON = 'OtherCapacityPublisher';

const otherObjects = gauge<'driver'>({
  name: 'topovol_capacity_other_publisher_objects',
  help: "CSIStorageCapacity objects of this instance's driver that another publisher manages (external-provisioner --enable-capacity, or another Topovol capacity instance) and that can cover what this instance publishes: more than 0 means two publishers, and kube-scheduler trusts the larger figure (docs/capacity.md).",
  labelNames: ['driver'],
});

export interface PublisherIdentity {
  driverName: string;
  /** This instance's managed-by value. */
  managedBy: string;
  /** --capacity-managed-by: the central instance's value, and the base of the per-node ones. */
  base: string;
  /** Per node: this instance's node. */
  nodeName?: string;
}

/**
 * The label selector of the driver's objects another publisher manages that can cover this
 * instance's segments. Central: any of the driver's objects not managed by it, cluster-wide (a
 * publisher keeps its objects in its own namespace). Per node (thousands of instances), only the
 * publishers that cover its node: a central external-provisioner, external-provisioner's instance
 * on this node, and a central Topovol.
 */
export function otherPublishersSelector(id: PublisherIdentity): string {
  const driver = `${LABEL_CSI_DRIVER_NAME}=${id.driverName}`;
  if (!id.nodeName) return `${driver},${LABEL_CSI_MANAGED_BY}!=${id.managedBy}`;
  const values = [EXTERNAL_PROVISIONER, externalProvisionerManagedBy(id.nodeName), id.base];
  return `${driver},${LABEL_CSI_MANAGED_BY} in (${values.join(',')})`;
}

/**
 * One problem per StorageClass that other publishers' objects cover, on `target(class)`: the
 * StorageClass for the central instance, its own Node per node (thousands of instances would
 * otherwise each record a Warning on the same class).
 */
export function otherPublisherProblems(driverName: string, objects: readonly CSIStorageCapacity[], target: (storageClassName: string) => KubeObject | undefined): Problem[] {
  const byClass = new Map<string, CSIStorageCapacity[]>();
  for (const o of objects) {
    const cls = o.storageClassName ?? '';
    const group = byClass.get(cls);
    if (group) group.push(o);
    else byClass.set(cls, [o]);
  }
  return [...byClass].sort(([a], [b]) => (a < b ? -1 : 1)).map(([cls, group]) => {
    const { managers, namespaces } = publishersOf(group);
    return {
      target: target(cls),
      id: `other-publisher\u0000${cls}`,
      reason: OTHER_PUBLISHER_REASON,
      message:
        `${group.length} CSIStorageCapacity object(s) of driver ${driverName} for class ${cls} are also published by ${managers.join(', ')} (namespace ${namespaces.join(', ')}): ` +
        'kube-scheduler reads every object of a class that covers a node and trusts the larger figure, so with two publishers a node can look as if it had room it has not. ' +
        'Run one publisher per driver: external-provisioner without --enable-capacity, or no Topovol capacity loop for this driver (docs/capacity.md).',
      fields: { storageClass: cls, driver: driverName, managers: managers.join(',') },
    };
  });
}

/** The distinct managers and namespaces of other publishers' objects, sorted. */
function publishersOf(objects: readonly CSIStorageCapacity[]): { managers: string[]; namespaces: string[] } {
  const managers = new Set(objects.map((o) => o.metadata?.labels?.[LABEL_CSI_MANAGED_BY] ?? ''));
  const namespaces = new Set(objects.map((o) => o.metadata?.namespace ?? ''));
  return { managers: [...managers].sort(), namespaces: [...namespaces].sort() };
}

/**
 * The central instance's `SolePublisher` condition on the driver's CSIDriverCapacity: what the
 * OtherCapacityPublisher Warnings say per class, in one place `kubectl describe` shows.
 */
export function solePublisherCondition(driverName: string, objects: readonly CSIStorageCapacity[]): StatusCondition {
  if (objects.length === 0) return { type: 'SolePublisher', status: 'True', reason: 'NoOtherPublisher', message: `no other manager publishes CSIStorageCapacity objects of driver ${driverName}` };
  const { managers, namespaces } = publishersOf(objects);
  return {
    type: 'SolePublisher',
    status: 'False',
    reason: OTHER_PUBLISHER_REASON,
    // No count: the head is rewritten when the message changes, and the other publisher's objects come and go.
    message: `CSIStorageCapacity objects of driver ${driverName} are also published by ${managers.join(', ')} (namespace ${namespaces.join(', ')}): kube-scheduler trusts the larger of two figures; run one publisher per driver (docs/capacity.md).`,
  };
}

/**
 * Reports another publisher of this driver's capacity, which this instance cannot stop: a Warning
 * Event for each StorageClass it covers, on `target(class)` (otherPublisherProblems), a log line
 * (once while the finding stays the same) and
 * the topovol_capacity_other_publisher_objects gauge. The objects are watched on every replica;
 * only the leader reports, through the runnable returned (started with the loop's others), at
 * each change of those objects and every `recheckMs`.
 */
export function otherPublishersReport(
  objects: Pick<InformerView<CSIStorageCapacity>, 'cache' | 'addEventHandler'>,
  target: (storageClassName: string) => KubeObject | undefined,
  events: CapacityEvents,
  log: Logger,
  driverName: string,
  recheckMs: number,
): Runnable {
  const reporter = new ProblemReporter(events, log);
  let leading = false;
  // Coalesced: a relist of many objects reports once.
  const check = oncePerTurn(
    () => {
      const found = objects.cache.list();
      otherObjects.set({ driver: driverName }, found.length);
      if (leading) reporter.report(otherPublisherProblems(driverName, found, target));
    },
    (err) => log.error('checking for other capacity publishers failed', { error: errorMessage(err) }),
  );
  otherObjects.set({ driver: driverName }, 0);
  objects.addEventHandler({ onAdd: check, onUpdate: check, onDelete: check });
  return runnableFunc('capacity-other-publishers', async (signal) => {
    leading = true;
    try {
      while (!signal.aborted) {
        check();
        await sleep(recheckMs, signal);
      }
    } finally {
      leading = false;
    }
  });
}
