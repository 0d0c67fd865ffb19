import type { FlagSpec } from '@topovol/shared';

export const STALE_SELECTED_NODE_GRACE_FLAG = 'stale-selected-node-grace';
/** Longer than external-provisioner's default --retry-interval-max (5m), so a retrying provisioning always shows activity within it. */
export const STALE_SELECTED_NODE_GRACE_DEFAULT_MS = 10 * 60_000;

/** The pv-binder's own flags (the manager's are in @topovol/shared). */
export const binderFlags: FlagSpec[] = [
  {
    name: STALE_SELECTED_NODE_GRACE_FLAG,
    type: 'duration',
    default: STALE_SELECTED_NODE_GRACE_DEFAULT_MS,
    help: 'How long a claim\'s volume.kubernetes.io/selected-node must have had no pod that could use it, and the external provisioner no activity on it, before the pv-binder clears it (kubernetes #112347). 0 clears at once; a negative value never clears.',
  },
];
