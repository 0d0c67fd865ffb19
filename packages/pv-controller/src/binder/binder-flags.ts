import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';

export const STALE_SELECTED_NODE_GRACE_FLAG = 'stale-selected-node-grace';
/** Longer than external-provisioner's default --retry-interval-max (5m), so a retrying provisioning always shows activity within it. */
export const STALE_SELECTED_NODE_GRACE_DEFAULT_MS = 10 * 60_000;

export const SYNC_PERIOD_FLAG = 'pvclaimbinder-sync-period';
/** kube-controller-manager's default for the same flag. */
export const SYNC_PERIOD_DEFAULT_MS = 15_000;

/** The pv-binder's own flags (the manager's are in @topovol/shared). */
export const binderFlags: FlagSpec[] = [
  {
    name: STALE_SELECTED_NODE_GRACE_FLAG,
    type: 'duration',
    default: STALE_SELECTED_NODE_GRACE_DEFAULT_MS,
    help: `How long a delayed-binding claim's ${ANN_SELECTED_NODE} must have pointed at a node that is gone, outside the class's allowedTopologies, or used by no pod, with no activity of the external provisioner on the claim, before the pv-binder removes it (kubernetes #112347). 0 removes at once; a negative value never removes.`,
  },
  {
    name: SYNC_PERIOD_FLAG,
    type: 'duration',
    default: SYNC_PERIOD_DEFAULT_MS,
    help: 'How often the pv-binder re-syncs every claim and volume, as kube-controller-manager\'s flag of the same name: what changes without an event it watches (a node that joins later, a class created after its claims) is picked up within this period. 0 disables it.',
  },
];
