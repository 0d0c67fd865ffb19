import { CSI_DRIVER_CAPACITY_API_VERSION } from './capacity-status-types.js';
import type { CapacityStatusObject, CSIDriverCapacityStatus } from './capacity-status-types.js';
import { expiredPools, withoutPools } from './expiry.js';
import type { PoolRef } from './expiry.js';
import { extractOwned, managedFieldsOf, ownsPool } from './managed-fields.js';

/**
 * One step of removing expired pools, always with the resourceVersion it was planned from as a
 * precondition, so that an owner refreshing its entry meanwhile makes the step fail (Conflict)
 * instead of losing a fresh entry.
 *
 * - applyAs: an expired pool belongs to a server-side apply manager (a per-node writer that
 *   stopped). The pruner re-applies that manager's own configuration, rebuilt from managedFields,
 *   without the expired pools. SSA then removes the fields no manager owns any more, and drops the
 *   manager's managedFields entry once it owns nothing, so node churn does not leave dead managers
 *   behind. A JSON patch would also remove the values, but under the pruner's own name, and the
 *   stale manager would stay listed; applying as the owner is the operation SSA defines for "this
 *   manager no longer wants these fields".
 * - remove: what is left (pools also or only written by Update, e.g. kubectl edit), by JSON patch
 *   with a test on resourceVersion.
 */
export type PruneStep =
  | { kind: 'applyAs'; manager: string; config: CapacityStatusObject; pools: PoolRef[] }
  | { kind: 'remove'; patch: JsonPatchOp[]; pools: PoolRef[] };

export type JsonPatchOp = { op: 'test'; path: string; value: string } | { op: 'remove'; path: string };

/** kind: of obj (a listed item may not carry it): CSIDriverCapacityShard, or the head's legacy pools. */
export function planPrune(obj: CapacityStatusObject, nowMs: number, kind = 'CSIDriverCapacity'): PruneStep | undefined {
  const expired = expiredPools(obj.status, nowMs);
  if (expired.length === 0) return undefined;
  const name = obj.metadata?.name ?? '';
  const rv = obj.metadata?.resourceVersion ?? '';
  for (const m of managedFieldsOf(obj)) {
    if (m.operation !== 'Apply' || m.subresource !== 'status' || !m.manager) continue;
    const mine = expired.filter((r) => ownsPool(m.fieldsV1, r.storageClassName, r.pool));
    if (mine.length === 0) continue;
    const owned = (extractOwned(obj.status, m.fieldsV1?.['f:status']) ?? {}) as CSIDriverCapacityStatus;
    const rest = withoutPools(owned, mine);
    return {
      kind: 'applyAs',
      manager: m.manager,
      pools: mine,
      config: {
        apiVersion: CSI_DRIVER_CAPACITY_API_VERSION,
        kind,
        metadata: { name, resourceVersion: rv },
        // Nothing left: no status at all, not `status: {}`, which would still own f:status and keep
        // the dead manager listed in managedFields.
        ...(Object.keys(rest).length > 0 ? { status: rest } : {}),
      },
    };
  }
  // No applier owns them (any more): remove by index, highest first so earlier indexes stay valid.
  const patch: JsonPatchOp[] = [{ op: 'test', path: '/metadata/resourceVersion', value: rv }];
  const gone = new Set(expired.map((r) => JSON.stringify([r.storageClassName, r.pool])));
  const storage = obj.status?.storage ?? [];
  for (let i = storage.length - 1; i >= 0; i--) {
    const pools = storage[i]!.pools ?? [];
    for (let j = pools.length - 1; j >= 0; j--) {
      if (gone.has(JSON.stringify([storage[i]!.storageClassName, pools[j]!.name]))) patch.push({ op: 'remove', path: `/status/storage/${i}/pools/${j}` });
    }
  }
  return { kind: 'remove', patch, pools: expired };
}
