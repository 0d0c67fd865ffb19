import { counter } from '@topovol/shared';

const rollbacks = counter<'result'>({
  name: 'topovol_rollback_rollbacks_total',
  help: 'Provisioning rollbacks by result: rolled_back (started: recorded, its claims to be deleted and re-created), refused (not justifiable), limited (the workload had its share), aborted (stopped before a claim was deleted: something changed), raced (the pod was scheduled while its claim was being deleted), dry_run, error (a step failed; retried).',
  labelNames: ['result'],
});

const marks = counter<'mark'>({
  name: 'topovol_rollback_volumes_marked_total',
  help: 'Volumes marked by the rollback controller, by mark (unused, used).',
  labelNames: ['mark'],
});

const marksRefused = counter<'mark'>({
  name: 'topovol_rollback_volume_marks_refused_total',
  help: 'Volume marks the API server refused (an admission policy or webhook, a narrowed role), by the mark tried (unused, used); each is a VolumeMarkRefused Warning on the volume and is tried again a minute later.',
  labelNames: ['mark'],
});

const recreated = counter({
  name: 'topovol_rollback_claims_recreated_total',
  help: 'Claims recreated (Pending again) after a rollback deleted them.',
});

const retained = counter({
  name: 'topovol_rollback_volumes_retained_total',
  help: 'Volumes a rollback left with reclaim policy Retain instead of giving their Delete back, because a pod may have used them while their claim was being deleted (or this process did not watch that time), or because the API server refused the write; counted when the annotation saying why is written. An administrator recovers or deletes them, or gives the Delete back.',
});

const endedUseEvicted = counter({
  name: 'topovol_rollback_ended_uses_forgotten_total',
  help: 'Uses of claims by deleted pods that ran or were scheduled, kept for claims the manager has not seen, forgotten because too many were kept in their namespace or in all; each time, volumes marked unused in those namespaces are marked used for good.',
});

for (const result of ['rolled_back', 'refused', 'limited', 'aborted', 'raced', 'dry_run', 'error']) rollbacks.inc({ result }, 0);
for (const mark of ['unused', 'used']) {
  marks.inc({ mark }, 0);
  marksRefused.inc({ mark }, 0);
}

export type RollbackResult = 'rolled_back' | 'refused' | 'limited' | 'aborted' | 'raced' | 'dry_run' | 'error';
export const countRollback = (result: RollbackResult): void => rollbacks.inc({ result });
export const countMark = (mark: 'unused' | 'used'): void => marks.inc({ mark });
export const countMarkRefused = (mark: 'unused' | 'used'): void => marksRefused.inc({ mark });
export const countRecreated = (): void => recreated.inc();
export const countRetained = (): void => retained.inc();
export const countEndedUseEvicted = (n: number): void => endedUseEvicted.inc(n);
