import { compare } from './build-storage-status.js';
import type { CapacityStatusObject, CSIDriverCapacityStatus, Condition, StorageStatus } from './capacity-status-types.js';
import { extractOwned, statusApplier } from './managed-fields.js';

export interface PublishInput {
  /** The object as it is on the server. */
  live: CapacityStatusObject;
  fieldManager: string;
  /** What this manager wants to own: storage entries with fresh expiry times, merged conditions. */
  desired: { storage: StorageStatus[]; conditions: Condition[] };
  nowMs: number;
  expiryMs: number;
}

export type PublishDecision = { write: false } | { write: true; reason: 'changed' | 'refresh' };

/** Storage entries sorted, without expiryTime, in a canonical JSON form for comparison. */
function canonicalStorage(storage: readonly StorageStatus[] | undefined): string {
  const norm = [...(storage ?? [])]
    .map((s) => ({
      storageClassName: s.storageClassName,
      pools: [...(s.pools ?? [])]
        .map((p) => {
          const { expiryTime: _expiry, ...rest } = p;
          return { ...rest, nodeList: rest.nodeList ? [...rest.nodeList].sort() : undefined };
        })
        .sort((a, b) => compare(a.name, b.name)),
    }))
    .filter((s) => s.pools.length > 0)
    .sort((a, b) => compare(a.storageClassName, b.storageClassName));
  return stableJson(norm);
}

export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => compare(a, b));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * Whether applying desired would change anything this manager owns. The comparison is against
 * the manager's own fields on the server (from managedFields), so an entry deleted or taken over
 * by someone else, or a deleted object, is rewritten, while unchanged content is not. expiryTime
 * alone is refreshed only once the earliest owned expiry is within half of expiryMs, and only to a
 * later one: an idle cluster then costs one write per expiryMs/2, not one per poll, and a figure
 * the driver has not confirmed again is not renewed. An owned expiry more than expiryMs ahead (a
 * clock that ran ahead when it was written) is brought back to the wanted one.
 */
export function decidePublish(input: PublishInput): PublishDecision {
  const mine = statusApplier(input.live, input.fieldManager);
  const owned = (extractOwned(input.live.status, mine?.fieldsV1?.['f:status']) ?? {}) as CSIDriverCapacityStatus;
  if (canonicalStorage(owned.storage) !== canonicalStorage(input.desired.storage)) return { write: true, reason: 'changed' };
  if (stableJson(owned.conditions ?? []) !== stableJson(input.desired.conditions)) return { write: true, reason: 'changed' };
  // Only a later expiry is worth a write: a figure the driver did not confirm again keeps its own.
  const refreshBefore = input.nowMs + input.expiryMs / 2;
  const wanted = new Map<string, number>();
  for (const s of input.desired.storage) for (const p of s.pools ?? []) wanted.set(JSON.stringify([s.storageClassName, p.name]), p.expiryTime === undefined ? Infinity : Date.parse(p.expiryTime));
  for (const s of owned.storage ?? []) {
    for (const p of s.pools ?? []) {
      const t = p.expiryTime === undefined ? NaN : Date.parse(p.expiryTime);
      const next = wanted.get(JSON.stringify([s.storageClassName, p.name])) ?? -Infinity;
      if ((Number.isNaN(t) || t < refreshBefore) && !(next <= t)) return { write: true, reason: 'refresh' };
      // Later than any expiry this writer could have set now: written while its clock ran ahead
      // (corrected since). Kept, it would outlive this writer by that much: bring it back.
      if (t > input.nowMs + input.expiryMs && next < t) return { write: true, reason: 'refresh' };
    }
  }
  return { write: false };
}
