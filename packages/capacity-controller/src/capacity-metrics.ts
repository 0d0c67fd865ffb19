import { counter, gauge } from '@topovol/shared';
import type { CapacityItem } from './objects/capacity-item.js';
import { formatSegment } from './pools/pool-coverage.js';

// external-provisioner's names (pkg/capacity), unprefixed, so its dashboards work for Topovol too.
const desiredGoal = gauge({
  name: 'csistoragecapacities_desired_goal',
  help: 'Number of CSIStorageCapacity objects that are supposed to be managed automatically.',
});
const desiredCurrent = gauge({
  name: 'csistoragecapacities_desired_current',
  help: 'Number of CSIStorageCapacity objects that exist and are supposed to be managed automatically.',
});
const obsolete = gauge({
  name: 'csistoragecapacities_obsolete',
  help: 'Number of CSIStorageCapacity objects that exist and will be deleted automatically.',
});
const objectWrites = counter<'verb'>({
  name: 'topovol_capacity_object_writes_total',
  help: 'Writes of CSIStorageCapacity objects by verb (create, update, delete); flat while nothing changes.',
  labelNames: ['verb'],
});
const writesRefused = counter<'driver' | 'verb'>({
  name: 'topovol_capacity_object_writes_refused_total',
  help: 'CSIStorageCapacity writes the API server refused (authorization, an admission policy or webhook, a quota, validation), by driver and verb: the published figures go stale.',
  labelNames: ['driver', 'verb'],
});
for (const verb of ['create', 'update', 'delete']) objectWrites.inc({ verb }, 0);
// A level, not the counter: denied writes are retried with the work queue's backoff (a poll
// interval apart at its cap, which may be many minutes), so a rate of denials comes and goes while
// the loop still owes them.
const writesDenied = gauge<'driver'>({
  name: 'topovol_capacity_object_writes_denied',
  help: '1 while refused CSIStorageCapacity writes are still owed (authorization, an admission policy or webhook, a quota, validation), else 0.',
  labelNames: ['driver'],
});

// Per node: a level, so an alert can say which instances publish nothing (own-node-report.ts).
const nodeMissing = gauge<'driver'>({
  name: 'topovol_capacity_node_missing',
  help: '1 while a per-node capacity instance\'s --capacity-node-name names no Node (it publishes nothing then), else 0.',
  labelNames: ['driver'],
});

const available = gauge<'driver' | 'storage_class' | 'segment' | 'pool'>({
  name: 'topovol_capacity_available_bytes',
  help: 'Capacity the driver last reported, by storage class (or <ephemeral>), segment (label=value,...) and pool.',
  labelNames: ['driver', 'storage_class', 'segment', 'pool'],
});

/** An item's labels on topovol_capacity_available_bytes. */
const itemLabels = (driver: string, item: CapacityItem): { driver: string; storage_class: string; segment: string; pool: string } => ({ driver, storage_class: item.storageClassName, segment: formatSegment(item.segment), pool: item.pool });

export const capacityMetrics = {
  measured(driver: string, item: CapacityItem, bytes: bigint): void {
    available.set(itemLabels(driver, item), Number(bytes));
  },
  forget(driver: string, item: CapacityItem): void {
    available.remove(itemLabels(driver, item));
  },
  setObjectCounts(goal: number, current: number, obsoleteCount: number): void {
    desiredGoal.set(goal);
    desiredCurrent.set(current);
    obsolete.set(obsoleteCount);
  },
  wrote(verb: 'create' | 'update' | 'delete'): void {
    objectWrites.inc({ verb });
  },
  refused(driver: string, verb: 'create' | 'update' | 'delete'): void {
    writesRefused.inc({ driver, verb });
    writesDenied.set({ driver }, 1);
  },
  /** No denied write is owed any more. */
  allowed(driver: string): void {
    writesDenied.set({ driver }, 0);
  },
  nodeMissing(driver: string, missing: boolean): void {
    nodeMissing.set({ driver }, missing ? 1 : 0);
  },
};
