import type { CapacityEntry } from './capacity-entry.js';
import type { NodeTopology, StoragePool, StorageStatus } from './capacity-status-types.js';
import { quantityBytes } from '@topovol/shared';

const CLASS_NAME = /^(<ephemeral>|<fallback>|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

export interface BuiltStorageStatus {
  /** Sorted by class, pools by name, so equal input gives byte-equal output. */
  storage: StorageStatus[];
  /** Entries left out, with why: the CRD would reject the whole write for one bad pool. */
  rejected: { entry: CapacityEntry; reason: string }[];
  /** Entries whose figure is older than the expiry: left out, so the pruner's removal sticks. */
  expired: CapacityEntry[];
}

/** The CRD's quantity fields take no sign. */
const nonNegative = (q: string): boolean => !q.trim().startsWith('-') && (quantityBytes(q) ?? -1n) >= 0n;

/** Why the API server would refuse this entry (mirrors the CRD's validation), or undefined. */
export function entryProblem(e: CapacityEntry): string | undefined {
  if (!CLASS_NAME.test(e.storageClassName) || e.storageClassName.length > 253) return `invalid storageClassName "${e.storageClassName}"`;
  if (!e.pool || e.pool.length > 253) return 'pool name must be 1 to 253 characters';
  if (e.nodeTopology && e.nodeList) return 'a pool has nodeTopology or nodeList, not both';
  if (e.nodeList && (e.nodeList.length === 0 || e.nodeList.some((n) => !n))) return 'nodeList must list node names';
  if (!nonNegative(e.capacity)) return `invalid capacity "${e.capacity}"`;
  if (e.maximumVolumeSize !== undefined && !nonNegative(e.maximumVolumeSize)) return `invalid maximumVolumeSize "${e.maximumVolumeSize}"`;
  return undefined;
}

/**
 * The desired status.storage[] for a list of capacity entries: grouped by class, one pool per
 * (class, pool name), each expiring expiryMs after its figure was measured (default now). Invalid
 * entries and duplicates are rejected (the first of a duplicate wins) rather than failing the whole
 * write; entries already expired are left out.
 */
export function buildStorageStatus(entries: readonly CapacityEntry[], nowMs: number, expiryMs: number): BuiltStorageStatus {
  const rejected: BuiltStorageStatus['rejected'] = [];
  const expired: CapacityEntry[] = [];
  const byClass = new Map<string, Map<string, StoragePool>>();
  for (const entry of entries) {
    const expiresAt = (entry.measuredAtMs ?? nowMs) + expiryMs;
    if (rfc3339(expiresAt) <= rfc3339(nowMs)) {
      expired.push(entry);
      continue;
    }
    const problem = entryProblem(entry);
    if (problem) {
      rejected.push({ entry, reason: problem });
      continue;
    }
    const pools = byClass.get(entry.storageClassName) ?? new Map<string, StoragePool>();
    byClass.set(entry.storageClassName, pools);
    if (pools.has(entry.pool)) {
      rejected.push({ entry, reason: `duplicate pool "${entry.pool}" in ${entry.storageClassName}` });
      continue;
    }
    const pool: StoragePool = { name: entry.pool };
    if (entry.nodeTopology) pool.nodeTopology = copyTopology(entry.nodeTopology);
    if (entry.nodeList) pool.nodeList = [...new Set(entry.nodeList)].sort();
    pool.capacity = entry.capacity;
    if (entry.maximumVolumeSize !== undefined) pool.maximumVolumeSize = entry.maximumVolumeSize;
    pool.expiryTime = rfc3339(expiresAt);
    pools.set(entry.pool, pool);
  }
  const storage = [...byClass.entries()]
    .sort(([a], [b]) => compare(a, b))
    .map(([storageClassName, pools]) => ({ storageClassName, pools: [...pools.values()].sort((a, b) => compare(a.name, b.name)) }));
  return { storage, rejected, expired };
}

function copyTopology(t: NodeTopology): NodeTopology {
  const out: NodeTopology = {};
  if (t.matchLabels) out.matchLabels = { ...t.matchLabels };
  if (t.matchExpressions?.length) out.matchExpressions = t.matchExpressions.map((e) => ({ ...e, ...(e.values ? { values: [...e.values] } : {}) }));
  return out;
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** RFC 3339 with second precision, as metav1.Time serializes (so what we write reads back equal). */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
