import { labelValue } from '@topovol/shared';
import type { Segment } from '../segments/segment.js';
import type { CapacityItem } from './capacity-item.js';

/** Whether a node with these labels is one of the item's nodes (its selector matches them). */
export function itemCoversNode(item: CapacityItem, labels: Segment): boolean {
  return Object.entries(item.segment).every(([k, v]) => labels[k] === v) && (item.absent ?? []).every((k) => labelValue(labels, k) === undefined);
}

/**
 * The items to ask again after provisioning failed for a claim of `storageClassName`: the figure
 * the scheduler trusted was wrong, so waiting for the next poll would send the next pod to the same
 * place (external-provisioner's capacity controller refreshes by class and topology for the same
 * reason: pkg/capacity/capacity.go, refreshSC and refreshTopology). With the node the claim was
 * meant for, only the items covering that node; without it (labels undefined), every item of the class.
 */
export function itemsToRefreshAfterFailure(items: Iterable<[string, { item: CapacityItem }]>, storageClassName: string, nodeLabels: Segment | undefined): string[] {
  const out: string[] = [];
  for (const [key, { item }] of items) {
    if (item.storageClassName !== storageClassName) continue;
    if (nodeLabels && !itemCoversNode(item, nodeLabels)) continue;
    out.push(key);
  }
  return out;
}
