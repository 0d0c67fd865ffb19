import { ANN_SELECTED_NODE, atLeast } from '@topovol/shared';
import type { FlagSpec } from '@topovol/shared';
import { MAX_VOLUME_NAME_PATTERNS, parseVolumeNamePatterns } from './provisioned-volume-names.js';

export const STALE_SELECTED_NODE_GRACE_FLAG = 'stale-selected-node-grace';
/** Longer than external-provisioner's default --retry-interval-max (5m), so a retrying provisioning always shows activity within it. */
export const STALE_SELECTED_NODE_GRACE_DEFAULT_MS = 10 * 60_000;

/**
 * What to say at start about a grace shorter than the default, or undefined. For a node that is
 * gone, activity older than the grace does not keep the annotation; a provisioner that retries
 * less often than that (external-provisioner's --retry-interval-max, 5m by default; after a burst
 * its recorder lets about one Event a claim through every 5 minutes, client-go's EventCorrelator)
 * may still be retrying when it is removed. 0 and negative values are deliberate choices.
 */
export function shortGraceWarning(graceMs: number): string | undefined {
  if (!(graceMs > 0 && graceMs < STALE_SELECTED_NODE_GRACE_DEFAULT_MS)) return undefined;
  return `--${STALE_SELECTED_NODE_GRACE_FLAG} is shorter than ${STALE_SELECTED_NODE_GRACE_DEFAULT_MS / 60_000}m: for a node that is gone, a provisioner retrying less often than that (external-provisioner's --retry-interval-max, 5m by default, with its Events rate-limited per claim) may lose the node it is provisioning on; make it longer than the provisioners' retry interval plus 5 minutes`;
}

export const PROVISIONED_VOLUME_NAMES_FLAG = 'provisioned-volume-names';

export const SYNC_PERIOD_FLAG = 'pvclaimbinder-sync-period';
/** kube-controller-manager's default for the same flag. */
export const SYNC_PERIOD_DEFAULT_MS = 15_000;

export const WORKERS_FLAG = 'concurrent-pv-binder-syncs';
/**
 * Each worker has one write in flight at a time, and kube-apiserver and etcd spend less CPU per
 * write the more writes arrive together (etcd commits concurrent proposals in batches): on two
 * cores, 16 in flight bound 10,000 static pairs faster than 4, with less API server and etcd CPU per
 * binding (hack/bench/README.md, "Where the machine's CPU goes"). Upstream's binder has one worker per queue;
 * external-provisioner defaults to --worker-threads=100.
 */
export const WORKERS_DEFAULT = 16;

/** The pv-binder's own flags (the manager's are in @topovol/shared). */
export const binderFlags: FlagSpec[] = [
  {
    name: WORKERS_FLAG,
    type: 'int',
    default: WORKERS_DEFAULT,
    help: "Claims and volumes the pv-binder reconciles concurrently, each with at most one write in flight (the pv-binder's own count; --concurrent-workers is the other loops'). Only matters when --kube-api-qps lets that many writes through. Must be at least 1.",
    validate: atLeast(1),
  },
  {
    name: STALE_SELECTED_NODE_GRACE_FLAG,
    type: 'duration',
    default: STALE_SELECTED_NODE_GRACE_DEFAULT_MS,
    help: `How long a delayed-binding claim's ${ANN_SELECTED_NODE} must have pointed at a node that is gone, outside the class's allowedTopologies, or used by no pod, with no activity of the external provisioner on the claim, before the pv-binder removes it (kubernetes #112347). Outside allowedTopologies or used by no pod, a claim the provisioner has tried at all is left to it: its CreateVolume may have made the volume. A value below the default is warned about at start: it must outlast the provisioners' retry interval (external-provisioner's --retry-interval-max) plus the 5 minutes its Events may be held back. 0 removes at once; a negative value (-1s) never removes.`,
    allowNegative: true,
  },
  {
    name: PROVISIONED_VOLUME_NAMES_FLAG,
    type: 'stringList',
    default: ['pvc'],
    help: `How the provisioners of the cluster name the volume they create for a claim, each as prefix or prefix:uuid-length: their external-provisioner's --volume-name-prefix and, when set, --volume-name-uuid-length (the default, pvc, is theirs). Before removing a stale ${ANN_SELECTED_NODE}, the pv-binder reads each name from the server and keeps the annotation if a volume made for the claim is there that its cache has not seen. A name not listed is seen only once the cache has it. At most ${MAX_VOLUME_NAME_PATTERNS}.`,
    validate: (v) => {
      const parsed = Array.isArray(v) ? parseVolumeNamePatterns(v) : 'expected a list';
      return typeof parsed === 'string' ? parsed : undefined;
    },
  },
  {
    name: SYNC_PERIOD_FLAG,
    type: 'duration',
    default: SYNC_PERIOD_DEFAULT_MS,
    help: 'How often the pv-binder re-syncs every claim and volume, as kube-controller-manager\'s flag of the same name: what changes without an event it watches (a node that joins later, a class created after its claims) is picked up within this period. 0 disables it.',
  },
];
