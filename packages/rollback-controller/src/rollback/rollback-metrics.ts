import { counter } from '@topovol/shared';

const rollbacks = counter<'result'>({
  name: 'topovol_rollback_rollbacks_total',
  help: 'Provisioning rollbacks by result: rolled_back (claims deleted for recreation), refused (not justifiable), aborted (a precondition failed: something changed), dry_run, error.',
  labelNames: ['result'],
});

const marks = counter<'mark'>({
  name: 'topovol_rollback_volumes_marked_total',
  help: 'Volumes marked by the rollback controller, by mark (unused, used).',
  labelNames: ['mark'],
});

const recreated = counter({
  name: 'topovol_rollback_claims_recreated_total',
  help: 'Claims recreated (Pending again) after a rollback deleted them.',
});

for (const result of ['rolled_back', 'refused', 'aborted', 'dry_run', 'error']) rollbacks.inc({ result }, 0);
for (const mark of ['unused', 'used']) marks.inc({ mark }, 0);

export type RollbackResult = 'rolled_back' | 'refused' | 'aborted' | 'dry_run' | 'error';
export const countRollback = (result: RollbackResult): void => rollbacks.inc({ result });
export const countMark = (mark: 'unused' | 'used'): void => marks.inc({ mark });
export const countRecreated = (): void => recreated.inc();
