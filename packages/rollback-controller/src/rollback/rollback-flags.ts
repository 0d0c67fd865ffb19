import type { FlagSpec } from '@topovol/shared';

export const GRACE_FLAG = 'rollback-grace-period';
export const MARK_WINDOW_FLAG = 'rollback-mark-window';

export const rollbackFlags: FlagSpec[] = [
  {
    name: GRACE_FLAG,
    type: 'duration',
    default: 2 * 60_000,
    help: 'How long a pod must be seen stuck on volumes provisioned for a node it cannot run on before they are rolled back (its other claims may still be provisioning).',
  },
  {
    name: MARK_WINDOW_FLAG,
    type: 'duration',
    default: 10 * 60_000,
    help: 'Only dynamically provisioned PVs younger than this are marked unused; older ones were not seen provisioned and are never rolled back.',
  },
];
