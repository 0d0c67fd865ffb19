import { isDnsLabel, isDnsSubdomain, LABEL_CSI_MANAGED_BY, LABEL_REGION, LABEL_ZONE, labelValueProblem } from '@topovol/shared';
import type { FlagSpec, FlagValue } from '@topovol/shared';
import { DEFAULT_STATUS_SHARDS, shardCountProblem } from './status/status-shards.js';

// Names follow external-provisioner's where one exists (--capacity-poll-interval,
// --capacity-for-immediate-binding, --capacity-ownerref-level), so its users find them.
export const F = {
  csiAddress: 'csi-address',
  driverName: 'driver-name',
  topology: 'capacity-topology',
  topologyPrefix: 'capacity-topology-prefix',
  domainLabels: 'domain-labels',
  pollInterval: 'capacity-poll-interval',
  minRefresh: 'capacity-min-refresh-interval',
  timeout: 'capacity-timeout',
  retries: 'capacity-getcapacity-attempts',
  namespace: 'capacity-namespace',
  managedBy: 'capacity-managed-by',
  immediate: 'capacity-for-immediate-binding',
  ephemeral: 'capacity-ephemeral',
  ownerLevel: 'capacity-ownerref-level',
  qps: 'capacity-api-qps',
  burst: 'capacity-api-burst',
  nodeName: 'capacity-node-name',
  expiry: 'capacity-status-expiry',
  statusShards: 'capacity-status-shards',
  unimplementedRetry: 'capacity-unimplemented-retry',
  anyNode: 'capacity-count-unregistered-nodes',
} as const;

const positive = (v: FlagValue): string | undefined => (typeof v === 'number' && v > 0 ? undefined : 'must be positive');

/**
 * A string flag that goes into label values, selectors or object names: refused at start with the
 * flag's name, not found out as a list the API server answers 400 at every retry. Empty is allowed
 * where the flag has a fallback.
 */
const nonEmpty = (check: (s: string) => string | undefined) => (v: FlagValue): string | undefined => (typeof v !== 'string' ? 'must be a string' : v === '' ? undefined : check(v));
const labelValue = nonEmpty(labelValueProblem);
/** No fallback: empty would label the objects "" (per node, "-<node>", which no label value may start with). */
const requiredLabelValue = (v: FlagValue): string | undefined => (v === '' ? 'may not be empty' : labelValue(v));
const namespaceName = nonEmpty((s) => (isDnsLabel(s) ? undefined : `"${s.slice(0, 70)}" is no namespace name (a DNS label: lower-case alphanumerics and '-', at most 63)`));
const nodeName = nonEmpty((s) => (isDnsSubdomain(s) ? undefined : `"${s.slice(0, 70)}" is no node name (a DNS subdomain)`));

export const capacityFlags: FlagSpec[] = [
  { name: F.csiAddress, type: 'string', default: '', help: 'The CSI driver\'s controller endpoint (unix socket path or unix:// URL). Required for the capacity loop.' },
  // A CSI driver's name is at most 63 alphanumerics, '-' and '.' (CSI spec, GetPluginInfo), and a label value here.
  { name: F.driverName, type: 'string', default: '', help: 'The CSI driver served; empty means the name the driver reports in GetPluginInfo.', validate: labelValue },
  { name: F.topology, type: 'string', default: 'csinode', help: 'Where topology segments come from: csinode (the driver\'s topology keys in CSINode objects), prefix (node labels under --capacity-topology-prefix) or domains (the ordered --domain-labels).' },
  { name: F.topologyPrefix, type: 'string', default: '', help: 'With --capacity-topology=prefix: the label prefix, e.g. example.com/ (KEP-1472 central provisioning).' },
  { name: F.domainLabels, type: 'string', default: '', help: `With --capacity-topology=domains: node label keys, outermost first, separated by ";" (as Ceph-CSI's --domain-labels), e.g. ${LABEL_REGION};${LABEL_ZONE};example.com/rack.` },
  { name: F.anyNode, type: 'bool', default: false, help: 'With --capacity-topology=prefix or domains: also count nodes whose CSINode does not list the driver (a driver without a node plugin). By default, as in csinode mode, only nodes where the driver is registered get capacity.' },
  { name: F.pollInterval, type: 'duration', default: 60_000, help: 'How often the capacity of every class and segment is asked for again, to notice changes made outside Kubernetes; also the longest (at most 5m) a failed write waits for its next try.', validate: positive },
  { name: F.minRefresh, type: 'duration', default: 5_000, help: 'A volume change is measured at once; further changes of the same (class, segment) within this interval of that call are merged into one call at its end, so a burst costs at most one call per interval. Polls open no interval.', validate: positive },
  { name: F.unimplementedRetry, type: 'duration', default: 10 * 60_000, help: 'After GetCapacity answers Unimplemented, ask again this long later, doubling each time it still does (up to 1h): a driver upgraded in place is tracked without a restart.', validate: positive },
  { name: F.timeout, type: 'duration', default: 10_000, help: 'Deadline of one GetCapacity call.', validate: positive },
  { name: F.retries, type: 'int', default: 3, help: 'Tries of GetCapacity per refresh when the driver is unavailable or slow, with exponential backoff; then the refresh is retried later by the work queue.', validate: positive },
  { name: F.namespace, type: 'string', default: '', help: 'Namespace of the CSIStorageCapacity objects; empty means $NAMESPACE, else topovol-system.', validate: namespaceName },
  { name: F.managedBy, type: 'string', default: 'topovol-capacity', help: `Value of the ${LABEL_CSI_MANAGED_BY} label on our CSIStorageCapacity objects; one value per instance.`, validate: requiredLabelValue },
  { name: F.immediate, type: 'bool', default: false, help: 'Also track StorageClasses with volumeBindingMode Immediate (the scheduler only uses capacity for WaitForFirstConsumer).' },
  { name: F.ephemeral, type: 'bool', default: false, help: 'Also ask for capacity without parameters and report it as <ephemeral> in the aggregated status (the capacity for inline ephemeral volumes).' },
  { name: F.ownerLevel, type: 'int', default: 1, help: 'Owner of the CSIStorageCapacity objects, from $POD_NAME/$NAMESPACE: 0 the pod, 1 its controller (ReplicaSet or StatefulSet), 2 that one\'s controller (Deployment), -1 none.' },
  { name: F.qps, type: 'float', default: 5, help: 'API requests per second for CSIStorageCapacity objects, apart from --kube-api-qps; the aggregated status (CSIDriverCapacity) has a budget of its own with the same figures, so its renewals never hold back an object. 0 means unthrottled.' },
  { name: F.burst, type: 'int', default: 10, help: 'Burst of --capacity-api-qps (of each of the two budgets).' },
  { name: F.nodeName, type: 'string', default: '', help: 'Per-node mode (a DaemonSet next to a per-node driver, as external-provisioner --node-deployment --enable-capacity): publish CSIStorageCapacity objects for this node\'s segment only, labelled managed-by <--capacity-managed-by>-<node>, and one <ephemeral> pool of the aggregated status under a field manager of its own. Usually $(NODE_NAME); use --capacity-ownerref-level=0 so a node\'s objects go with its pod.', validate: nodeName },
  { name: F.expiry, type: 'duration', default: 5 * 60_000, help: 'expiryTime of the entries this instance writes into the aggregated status; expired entries are pruned.', validate: positive },
  {
    name: F.statusShards,
    type: 'int',
    default: DEFAULT_STATUS_SHARDS,
    help: 'How many CSIDriverCapacityShard objects the aggregated status\'s pools are spread over (by a hash of the pool name), so that no object nears the API server\'s request size limit; about 400 bytes per pool with its managedFields, so 64 keep 55,000 pools near 350 KB each. Use the same value in every instance of a driver; after a change, pools at their old place expire and are pruned (docs/adr/0010).',
    validate: (v) => (typeof v === 'number' ? shardCountProblem(v) : 'must be a number'),
  },
];

/** external-provisioner's --retry-interval-max default: the longest a failing capacity key waits. */
const MAX_RETRY_MS = 5 * 60_000;

/**
 * The capacity queue's per-key backoff cap: a failing item (a write denied until its role is bound,
 * the API server away) is tried again within a poll interval and 5 minutes, never after client-go's
 * 1000 s. external-provisioner's poll adds every item to its queue whatever its backoff
 * (pkg/capacity/capacity.go, pollCapacities), and its queue's backoff stops at --retry-interval-max.
 */
export function retryCapMs(pollIntervalMs: number): number {
  return Math.min(pollIntervalMs, MAX_RETRY_MS);
}

export interface CapacityFlags {
  csiAddress: string;
  driverName: string;
  topology: string;
  topologyPrefix: string;
  domainLabels: string;
  pollIntervalMs: number;
  minRefreshMs: number;
  timeoutMs: number;
  attempts: number;
  namespace: string;
  managedBy: string;
  immediate: boolean;
  ephemeral: boolean;
  ownerLevel: number;
  qps: number;
  burst: number;
  nodeName: string;
  expiryMs: number;
  statusShards: number;
  unimplementedRetryMs: number;
  anyNode: boolean;
}

export function readCapacityFlags(extra: Record<string, FlagValue>): CapacityFlags {
  const s = (n: string): string => String(extra[n] ?? '');
  const num = (n: string): number => Number(extra[n]);
  return {
    csiAddress: s(F.csiAddress),
    driverName: s(F.driverName),
    topology: s(F.topology),
    topologyPrefix: s(F.topologyPrefix),
    domainLabels: s(F.domainLabels),
    pollIntervalMs: num(F.pollInterval),
    minRefreshMs: num(F.minRefresh),
    timeoutMs: num(F.timeout),
    attempts: num(F.retries),
    namespace: s(F.namespace) || process.env.NAMESPACE || 'topovol-system',
    managedBy: s(F.managedBy),
    immediate: extra[F.immediate] === true,
    ephemeral: extra[F.ephemeral] === true,
    ownerLevel: num(F.ownerLevel),
    qps: num(F.qps),
    burst: num(F.burst),
    nodeName: s(F.nodeName),
    expiryMs: num(F.expiry),
    statusShards: num(F.statusShards),
    unimplementedRetryMs: num(F.unimplementedRetry),
    anyNode: extra[F.anyNode] === true,
  };
}
