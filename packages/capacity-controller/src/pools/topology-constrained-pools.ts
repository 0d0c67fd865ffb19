import { labelKeyProblem, labelValueProblem } from '@topovol/shared';
import type { Segment } from '../segments/segment.js';

/**
 * The StorageClass parameter listing pools and the domain each serves (Ceph-CSI's topology-aware
 * provisioning design, "StorageClass changes to denote pools with domain affinity"). Named and shaped as Ceph-CSI's parameter, so one
 * StorageClass serves both:
 *
 *   topologyConstrainedPools: '[{"poolName":"east-z1","domainSegments":[
 *       {"domainLabel":"topology.kubernetes.io/region","value":"east"},
 *       {"domainLabel":"topology.kubernetes.io/zone","value":"z1"}]}]'
 *
 * `domainLabel` is the full node label key (Ceph-CSI prefixes a short name with its driver's
 * topology domain; Topovol reads the node label directly).
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
