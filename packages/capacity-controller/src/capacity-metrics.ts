import { counter, gauge } from '@topovol/shared';

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
for (const verb of ['create', 'update', 'delete']) objectWrites.inc({ verb }, 0);

const available = gauge<'driver' | 'storage_class' | 'segment' | 'pool'>({
  name: 'topovol_capacity_available_bytes',
  help: 'Capacity the driver last reported, by storage class (or <ephemeral>), segment (label=value,...) and pool.',
  labelNames: ['driver', 'storage_class', 'segment', 'pool'],
});

export const capacityMetrics = {
  measured(labels: { driver: string; storage_class: string; segment: string; pool: string }, bytes: bigint): void {
    available.set(labels, Number(bytes));
  },
  forget(labels: { driver: string; storage_class: string; segment: string; pool: string }): void {
    available.remove(labels);
  },
  setObjectCounts(goal: number, current: number, obsoleteCount: number): void {
    desiredGoal.set(goal);
    desiredCurrent.set(current);
    obsolete.set(obsoleteCount);
  },
  wrote(verb: 'create' | 'update' | 'delete'): void {
    objectWrites.inc({ verb });
  },
};
