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
 * `topology.kubernetes.io/zone`. A whole key is accepted too (resolvePoolDomains).
 */
export const POOLS_PARAMETER = 'topologyConstrainedPools';

/** The CSI parameter naming the pool when Topovol asks a driver for one pool's capacity. */
export const POOL_NAME_PARAMETER = 'pool';

export interface ConstrainedPool {
  name: string;
  /** The domain the pool serves: node label key → value. */
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
 * Each pool's domain keyed by the topology keys the segments use (`keys`), as Ceph-CSI matches a
 * `domainLabel`: against the name part of each key (domainName). A `domainLabel` equal to a whole key
 * is that key (Topovol's first form; Ceph-CSI itself matches no pool for it, see docs/capacity.md).
 * One that names no key stays as it is and matches no segment; one whose name part two keys share
 * (`a.example/zone` and `b.example/zone`) is an error: Ceph-CSI keeps one of the two at random.
 */
export function resolvePoolDomains(pools: readonly ConstrainedPool[], keys: Iterable<string>): PoolsParseResult {
  const byName = new Map<string, string[]>();
  const all = new Set(keys);
  for (const k of all) byName.set(domainName(k), [...(byName.get(domainName(k)) ?? []), k]);
  const out: ConstrainedPool[] = [];
  for (const pool of pools) {
    const domain: Record<string, string> = {};
    for (const [label, value] of Object.entries(pool.domain)) {
      let key = label;
      if (!all.has(label)) {
        const named = byName.get(label) ?? [];
        if (named.length > 1) return { error: `${POOLS_PARAMETER} (${pool.name}): domainLabel ${label} names more than one topology key (${named.sort().join(', ')}); give the whole key` };
        if (named.length === 1) key = named[0]!;
      }
      if (Object.hasOwn(domain, key)) return { error: `${POOLS_PARAMETER} (${pool.name}): domain label ${key} given twice` };
      domain[key] = value;
    }
    out.push({ name: pool.name, domain });
  }
  return { pools: out };
}
