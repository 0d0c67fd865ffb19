import { atLeast } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import { NODE_STATE_DWELL_MS } from './decide-rollback.js';

export const GRACE_FLAG = 'rollback-grace-period';
export const NODE_STATE_WAIT_FLAG = 'rollback-node-state-wait';
export const MARK_WINDOW_FLAG = 'rollback-mark-window';
export const MAX_ROLLBACKS_FLAG = 'rollback-max-per-workload';
export const BACKOFF_FLAG = 'rollback-backoff';
export const HISTORY_TTL_FLAG = 'rollback-history-ttl';

// The defaults, named once: the flags below and the loop's reading of them (rollback-controller.ts).
export const GRACE_DEFAULT_MS = 2 * 60_000;
export const MARK_WINDOW_DEFAULT_MS = 10 * 60_000;
export const MAX_ROLLBACKS_DEFAULT = 3;
export const BACKOFF_DEFAULT_MS = 30_000;
export const HISTORY_TTL_DEFAULT_MS = 7 * 24 * 3_600_000;

export const rollbackFlags: FlagSpec[] = [
  {
    name: GRACE_FLAG,
    type: 'duration',
    default: GRACE_DEFAULT_MS,
    help: "How long a stuck pod waits while another of its claims is undecided (not pinned to the node, not failed there, not bound to a volume that names it back: it may still be provisioning). With every claim decided, the rollback starts at once (see --rollback-node-state-wait).",
  },
  {
    name: NODE_STATE_WAIT_FLAG,
    type: 'duration',
    default: NODE_STATE_DWELL_MS,
    help: "How long a pod with every claim decided must be seen stuck before its node's state alone (deleted, cordoned, tainted) rolls it back: kube-scheduler may be binding it to that node at that moment, which it does whether or not the node was cordoned or tainted since it chose it. A reported failure (a provisioner's, the scheduler's) needs no wait.",
  },
  {
    name: MARK_WINDOW_FLAG,
    type: 'duration',
    default: MARK_WINDOW_DEFAULT_MS,
    help: 'Only dynamically provisioned PVs younger than this are marked; older ones were not seen provisioned and are never rolled back.',
  },
  {
    name: MAX_ROLLBACKS_FLAG,
    type: 'int',
    default: MAX_ROLLBACKS_DEFAULT,
    help: 'At most this many rollbacks per workload (a pod, the controller that re-creates it, or a StatefulSet replica; within its namespace) within --rollback-history-ttl; then a ProvisioningRollbackLimit Warning and no more. 0 rolls nothing back (each stuck pod gets that Warning). Must not be negative.',
    validate: atLeast(0),
  },
  {
    name: BACKOFF_FLAG,
    type: 'duration',
    default: BACKOFF_DEFAULT_MS,
    help: "After a workload's n-th rollback, wait this long times 2^(n-1) before another.",
  },
  {
    name: HISTORY_TTL_FLAG,
    type: 'duration',
    default: HISTORY_TTL_DEFAULT_MS,
    help: 'Finished ProvisioningRollback records are kept this long (they count towards --rollback-max-per-workload), then deleted.',
  },
];
