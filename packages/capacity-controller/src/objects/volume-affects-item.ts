import { labelValue } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import type { CapacityItem } from './capacity-item.js';

/**
 * Whether creating or deleting this PV may have changed the capacity of this item: the PV's node
 * affinity can hold in the item's segment, whatever its class, since classes of one driver often
 * share the storage (one volume group, one pool per node), as external-provisioner's
 * refreshTopology refreshes every item of the topology. Requirements on keys the segment does not
 * fix are ignored (the segment may contain such nodes); no affinity means anywhere. Only `In`
 * requirements narrow it down: everything else is treated as "may be here", the safe side.
 */
export function volumeAffectsItem(pv: PersistentVolume, item: CapacityItem): boolean {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  if (terms.length === 0) return true;
  return terms.some((t) =>
    (t.matchExpressions ?? []).every((e) => {
      if (e.operator !== 'In') return true;
      const v = labelValue(item.segment, e.key);
      return v === undefined || (e.values ?? []).includes(v);
    }),
  );
}
