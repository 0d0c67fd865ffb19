import { labelKeyProblem, labelValueProblem } from '@topovol/shared';
import type { Segment } from '../segments/segment.js';

/**
 * The StorageClass parameter listing pools and the domain each serves (Ceph-CSI's topology-aware
 * provisioning design, "StorageClass changes to denote pools with domain affinity"). Named, shaped
 * and matched as Ceph-CSI's parameter, so one StorageClass serves both:
 *
 *   topologyConstrainedPools: '[{"poolName":"east-z1","domainSegments":[
 *       {"domainLabel":"region","value":"east"},
 *       {"domainLabel":"zone","value":"z1"}]}]'
 *
 * `domainLabel` names a topology key by its name part, the text after the prefix's "/": Ceph-CSI
 * compares it with each topology key of the request cut that way (extractDomainsFromlabels in
 * internal/util/topology.go), its node plugin reporting `topology.<driver>/zone` for a node label
 * `topology.kubernetes.io/zone`. A whole key (with its "/") matches nothing there, nor here
 * (poolMatches).
 */
export const POOLS_PARAMETER = 'topologyConstrainedPools';

/** The CSI parameter naming the pool when Topovol asks a driver for one pool's capacity. */
export const POOL_NAME_PARAMETER = 'pool';

export interface ConstrainedPool {
  name: string;
  /** The domain the pool serves: `domainLabel` (a topology key's name part) → value. */
  domain: Segment;
}

export type PoolsParseResult = { pools: ConstrainedPool[] } | { error: string };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Undefined when the class has no such parameter (ordinary per-segment capacity). */
export function parseConstrainedPools(parameters: Readonly<Record<string, string>> | undefined): PoolsParseResult | undefined {
  const raw = parameters?.[POOLS_PARAMETER];
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return { error: `parameter ${POOLS_PARAMETER} is not JSON: ${(err as Error).message}` };
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return { error: `parameter ${POOLS_PARAMETER} must be a non-empty JSON list of {poolName, domainSegments}` };
  const pools: ConstrainedPool[] = [];
  const names = new Set<string>();
  for (const [i, p] of parsed.entries()) {
    if (!isRecord(p) || typeof p.poolName !== 'string' || p.poolName === '') return { error: `${POOLS_PARAMETER}[${i}]: poolName must be a non-empty string` };
    if (names.has(p.poolName)) return { error: `${POOLS_PARAMETER}[${i}]: pool "${p.poolName}" is listed twice` };
    names.add(p.poolName);
    // The pool is carried in a label of its CSIStorageCapacity objects, and domains in their node selector.
    const badName = labelValueProblem(p.poolName);
    if (badName) return { error: `${POOLS_PARAMETER}[${i}]: poolName ${badName} (it is carried in the label capacity.topovol.io/pool)` };
    if (!Array.isArray(p.domainSegments) || p.domainSegments.length === 0) return { error: `${POOLS_PARAMETER}[${i}] (${p.poolName}): domainSegments must be a non-empty list` };
    const domain: Record<string, string> = {};
    for (const [j, d] of p.domainSegments.entries()) {
      if (!isRecord(d) || typeof d.domainLabel !== 'string' || d.domainLabel === '' || typeof d.value !== 'string' || d.value === '') {
        return { error: `${POOLS_PARAMETER}[${i}].domainSegments[${j}] (${p.poolName}): needs a non-empty domainLabel and value` };
      }
      const bad = labelKeyProblem(d.domainLabel) ?? labelValueProblem(d.value);
      if (bad) return { error: `${POOLS_PARAMETER}[${i}].domainSegments[${j}] (${p.poolName}): ${bad}` };
      if (Object.hasOwn(domain, d.domainLabel)) return { error: `${POOLS_PARAMETER}[${i}] (${p.poolName}): domain label ${d.domainLabel} given twice` };
      domain[d.domainLabel] = d.value;
    }
    pools.push({ name: p.poolName, domain });
  }
  return { pools };
}

/** A topology key's name part, as Ceph-CSI cuts it: the text after the first "/", or all of it. */
export function domainName(key: string): string {
  return key.slice(key.indexOf('/') + 1);
}

/**
 * Whether Ceph-CSI takes this pool for a node of `segment`, as its matchPoolToTopology does: every
 * `domainLabel` names a key of the segment by its name part (domainName) with the pool's value. A
 * `domainLabel` with a "/" never does (Ceph-CSI compares it with name parts only). Where two keys of
 * the segment have that name (`a.example/zone`, `b.example/zone`), Ceph-CSI's map keeps one of them
 * at random: `maybe` when only some of them have the pool's value.
 */
export function poolMatch(pool: ConstrainedPool, segment: Segment): 'always' | 'maybe' | 'never' {
  let out: 'always' | 'maybe' = 'always';
  for (const [label, value] of Object.entries(pool.domain)) {
    const keys = label.includes('/') ? [] : Object.keys(segment).filter((k) => domainName(k) === label);
    const agree = keys.filter((k) => segment[k] === value).length;
    if (agree === 0) return 'never';
    if (agree < keys.length) out = 'maybe';
  }
  return out;
}

/** Whether Ceph-CSI surely takes this pool for a node of `segment` (poolMatch). */
export function poolMatches(pool: ConstrainedPool, segment: Segment): boolean {
  return poolMatch(pool, segment) === 'always';
}

/**
 * The pool Ceph-CSI surely picks for a node of `segment`: the first listed one that matches
 * (FindPoolAndTopology, matchPoolToTopology), provided no pool before it may match, which would make
 * the pick depend on which of two keys of one name Ceph-CSI reads. Undefined when none is sure:
 * capacity is never offered on a guess.
 */
export function surePick(pools: readonly ConstrainedPool[], segment: Segment): ConstrainedPool | undefined {
  for (const pool of pools) {
    const m = poolMatch(pool, segment);
    if (m === 'always') return pool;
    if (m === 'maybe') return undefined;
  }
  return undefined;
}

/**
 * The pool's domain as topology keys (what its CSIStorageCapacity's node selector matches), from the
 * segments it serves; undefined when one of its names stands for more than one key among them (then
 * it is published per segment).
 */
export function poolDomainKeys(pool: ConstrainedPool, served: readonly Segment[]): Segment | undefined {
  const domain: Record<string, string> = {};
  for (const [label, value] of Object.entries(pool.domain)) {
    const keys = new Set(served.flatMap((s) => Object.keys(s).filter((k) => domainName(k) === label)));
    if (keys.size !== 1) return undefined;
    domain[[...keys][0]!] = value;
  }
  return domain;
}

/** The pools whose `domainLabel` has a "/": Ceph-CSI never takes them (poolMatches). */
export function poolsWithWholeKeys(pools: readonly ConstrainedPool[]): { pool: ConstrainedPool; label: string }[] {
  return pools.flatMap((pool) => {
    const label = Object.keys(pool.domain).find((l) => l.includes('/'));
    return label === undefined ? [] : [{ pool, label }];
  });
}
