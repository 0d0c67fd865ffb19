import type { StorageClass } from '@topovol/shared';
import { formatSegment, domainsWithoutPool, poolServices } from '../pools/pool-coverage.js';
import { domainName, parseConstrainedPools, poolDomainKeys, POOL_NAME_PARAMETER, POOLS_PARAMETER, poolsWithWholeKeys } from '../pools/topology-constrained-pools.js';
import { deeperKeys } from '../segments/deeper-keys.js';
import type { Segment } from '../segments/segment.js';
import { segmentContains, segmentKey } from '../segments/segment.js';
import type { CapacityItem } from './capacity-item.js';
import { EPHEMERAL_CLASS, itemKey } from './capacity-item.js';
import { itemCoversNode } from './failure-refresh.js';

export interface DesiredItem {
  item: CapacityItem;
  /** The GetCapacity parameters: the class's, or none for `<ephemeral>`. */
  parameters: Record<string, string>;
  /** A constrained pool published per segment it serves (earlier pools take part of its domain), not as its domain. */
  poolPart?: boolean;
}

export interface ClassProblem {
  storageClassName: string;
  reason: 'InvalidTopologyConstrainedPools' | 'NoPoolForDomain' | 'PoolNeverChosen';
  message: string;
}

export interface DesiredState {
  items: Map<string, DesiredItem>;
  /**
   * Classes whose existing objects are kept as they are (their parameters cannot be read now), with
   * when the class was created (ms; NaN if unknown): only objects made since are this class's.
   */
  frozen: Map<string, number>;
  /**
   * When each tracked class was created (ms; NaN if unknown). An object older than its class was
   * made for an earlier class of that name (deleted and re-created, perhaps with other parameters
   * or pools, while this process did not see the delete): it is never reused, and it goes.
   */
  created: Map<string, number>;
  problems: ClassProblem[];
  /** The keys each overlapped segment's selector excludes (DoesNotExist), by segment key (deeperKeys). */
  exclusions: ReadonlyMap<string, readonly string[]>;
}

export interface DesiredOptions {
  driverName: string;
  /** --capacity-for-immediate-binding: Immediate classes too (the scheduler ignores them, but other consumers may not). */
  immediateBinding: boolean;
  /** --capacity-ephemeral: `<ephemeral>` capacity per segment, for the aggregated status. */
  ephemeral: boolean;
  /** Per-node mode (--capacity-node-name): `segments` holds this node's segment only. */
  onlyNode?: string;
}

/** Classes of this driver the loop tracks. */
export function isTrackedClass(c: StorageClass, opts: DesiredOptions): boolean {
  if (c.provisioner !== opts.driverName) return false;
  return opts.immediateBinding || c.volumeBindingMode === 'WaitForFirstConsumer';
}

/** A live node as a pool's domain check sees it: its labels, and the segment it was placed in (none: the driver not registered there, or labels that give no segment). */
export interface NodeOfDomain {
  labels: Segment;
  segment?: Segment;
}

/**
 * Every (class, segment[, pool]) to track, as external-provisioner's capacity controller does for
 * classes × segments, with Ceph-CSI's topology-constrained pools: a class listing topology-constrained pools is tracked
 * per pool, in the pool's domain, and segments no pool serves are reported as problems.
 */
export function desiredItems(
  classes: readonly StorageClass[],
  segments: readonly Segment[],
  opts: DesiredOptions,
  keysOnNodes?: (segmentKey: string) => ReadonlySet<string> | undefined,
  domainNodes: readonly NodeOfDomain[] = [],
): DesiredState {
  const nodes = domainNodes.map((n) => ({ labels: n.labels, segment: n.segment && segmentKey(n.segment) }));
  const items = new Map<string, DesiredItem>();
  const frozen = new Map<string, number>();
  const created = new Map<string, number>();
  const problems: ClassProblem[] = [];
  const add = (item: CapacityItem, parameters: Record<string, string>, poolPart = false): void => {
    items.set(itemKey(item), { item, parameters, ...(poolPart ? { poolPart } : {}) });
  };
  // A segment overlapped by deeper ones excludes their nodes; a pool's domain deliberately does not.
  const deeper = deeperKeys(segments, keysOnNodes);
  const exclusive = (segment: Segment): Pick<CapacityItem, 'segment' | 'absent'> => {
    const absent = deeper.get(segmentKey(segment));
    return { segment, ...(absent ? { absent } : {}) };
  };
  for (const c of classes) {
    const name = c.metadata?.name;
    if (!name || !isTrackedClass(c, opts)) continue;
    created.set(name, Date.parse(c.metadata?.creationTimestamp ?? ''));
    const params = { ...(c.parameters ?? {}) };
    const pools = parseConstrainedPools(params);
    if (pools === undefined) {
      for (const segment of segments) add({ storageClassName: name, ...exclusive(segment), pool: '' }, params);
      continue;
    }
    if ('error' in pools) {
      frozen.set(name, created.get(name)!);
      problems.push({ storageClassName: name, reason: 'InvalidTopologyConstrainedPools', message: pools.error });
      continue;
    }
    delete params[POOLS_PARAMETER];
    for (const { pool, serves, wholeDomain, taken } of poolServices(segments, pools.pools)) {
      const asked = { ...params, [POOL_NAME_PARAMETER]: pool.name };
      // A pool serving its whole domain is published as that domain (a region pool serves every
      // zone in it). One that earlier listed pools partly overlap is published per segment it
      // serves, each matching exactly its own nodes: its domain's selector would also offer its
      // capacity on nodes whose volumes Ceph-CSI puts in another pool. So is one whose domain holds a
      // node in no segment (the driver not registered there, or its labels incomplete) outside
      // every segment it serves: the domain's selector would offer capacity there too, where
      // external-provisioner, which publishes per segment of registered nodes, offers none
      // (pkg/capacity/topology/nodes.go). Such a node inside a served segment is matched by that
      // segment's object as well, upstream's included, so it changes nothing. So too one whose
      // labels reach the domain though its segment is another pool's (a middle domain label
      // missing: `region` and `rack` without `zone` has the segment `region` alone).
      // `domainNodes`: every live node, placed or not; one placed in a segment the pool serves is
      // the pool's, even where its part's exclusions (DoesNotExist, csinode mode) leave it out.
      // The domain as topology keys: a domainLabel names a key by the part after its prefix
      // (poolMatch). Published as the domain only where that selector matches no segment but the
      // ones the pool serves: not where a name stands for several keys among them, nor where a
      // segment it does not serve carries the same keys (another key of the same name there makes
      // Ceph-CSI's pick unsure, or another pool's).
      const parts = serves.map((s): CapacityItem => ({ storageClassName: name, ...exclusive(s), pool: pool.name }));
      const keys = wholeDomain ? poolDomainKeys(pool, serves) : undefined;
      // Per node, `segments` is this node's own, so the checks here cannot see the domain's other
      // nodes: some may get their volumes from an earlier listed pool (Ceph-CSI takes the first
      // whose domain matches) or have no driver registered, and the domain's selector would offer
      // this pool's room there too. Per node the pool is published
      // for the node's own segment, as external-provisioner's per-node deployment publishes only
      // its node's (pkg/capacity/topology/nodes.go); the instances of the other nodes publish theirs.
      const domain = keys && !opts.onlyNode && segments.every((s) => !segmentContains(keys, s) || serves.includes(s)) ? keys : undefined;
      const served = new Set(serves.map(segmentKey));
      const exposed = domain !== undefined && nodes.some((n) => segmentContains(domain, n.labels) && !(n.segment !== undefined && served.has(n.segment)) && !parts.some((p) => itemCoversNode(p, n.labels)));
      if (domain && !exposed) add({ storageClassName: name, segment: domain, pool: pool.name }, asked);
      else for (const p of parts) add(p, asked, true);
      // Per node, the instance sees its own node only: another pool serving it says nothing of the
      // domain's other nodes (the instances there publish this pool's figure for theirs).
      if (serves.length === 0 && !opts.onlyNode) {
        problems.push({
          storageClassName: name,
          reason: 'PoolNeverChosen',
          message: `pool ${pool.name} is never chosen: pools listed before it in ${POOLS_PARAMETER} serve all its nodes (${taken.map(formatSegment).join('; ')}); Ceph-CSI takes the first listed pool whose domain matches the node`,
        });
      }
    }
    for (const { pool, label } of poolsWithWholeKeys(pools.pools)) {
      problems.push({
        storageClassName: name,
        reason: 'PoolNeverChosen',
        message: `pool ${pool.name} is never chosen: its domainLabel ${label} has a "/", and Ceph-CSI compares a domainLabel with the name after each topology key's prefix (write "${domainName(label)}")`,
      });
    }
    const missing = domainsWithoutPool(segments, pools.pools);
    if (missing.length > 0) {
      problems.push({
        storageClassName: name,
        reason: 'NoPoolForDomain',
        message: `no pool in ${POOLS_PARAMETER} serves ${missing.map(formatSegment).join('; ')}: volumes of this class cannot be provisioned on those nodes`,
      });
    }
  }
  if (opts.ephemeral) for (const segment of segments) add({ storageClassName: EPHEMERAL_CLASS, ...exclusive(segment), pool: '' }, {});
  return { items, frozen, created, problems, exclusions: deeper };
}
