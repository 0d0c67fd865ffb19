import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { CSIStorageCapacity, Event, Logger, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { CapacityInformers } from './capacity-loop-deps.js';
import { itemKey } from './objects/capacity-item.js';
import { itemOfObject } from './objects/capacity-object.js';
import type { DesiredItem } from './objects/desired-items.js';
import { itemsToRefreshAfterFailure } from './objects/failure-refresh.js';
import { volumeAffectsItem } from './objects/volume-affects-item.js';

/** What the capacity loop's informer handlers act on (capacity-loop.ts keeps the state behind it). */
export interface CapacityTriggerTarget {
  readonly inf: CapacityInformers;
  readonly driverName: string;
  /** Per-node mode: the one node this instance publishes. */
  readonly onlyNode?: string;
  readonly log: Logger;
  /** The items published now, by key. */
  items(): ReadonlyMap<string, DesiredItem>;
  /** Recompute segments × classes (the `sync` key). */
  sync(): void;
  /** Refresh one item (its key queued). */
  refresh(key: string): void;
  /** The item's figure may be stale: mark it so, then refresh it. */
  refreshDirty(key: string): void;
  /** Whether a reported provisioning failure may refresh this item now (rate limited per item). */
  mayRefreshAfterFailure(key: string): boolean;
  /** The informer showed an object of this item (the actuator's record of what it created). */
  objectSeen(key: string, name: string | undefined): void;
}

/** The informer handlers: which changes lead to which keys. */
export function registerCapacityTriggers(t: CapacityTriggerTarget): void {
  const { inf } = t;
  // Per node: other nodes change nothing this instance publishes.
  const ours = (o: { metadata?: { name?: string } }): boolean => !t.onlyNode || o.metadata?.name === t.onlyNode;
  const syncIfOurs = (o: { metadata?: { name?: string } }): void => {
    if (ours(o)) t.sync();
  };
  inf.nodes.addEventHandler({
    onAdd: syncIfOurs,
    onDelete: syncIfOurs,
    onUpdate: (a, b) => {
      if (!ours(b)) return;
      if (JSON.stringify(a.metadata?.labels ?? {}) !== JSON.stringify(b.metadata?.labels ?? {}) || !a.metadata?.deletionTimestamp !== !b.metadata?.deletionTimestamp) t.sync();
    },
  });
  inf.csiNodes.addEventHandler({ onAdd: syncIfOurs, onDelete: syncIfOurs, onUpdate: (_, b) => syncIfOurs(b) });
  const sync = (): void => t.sync();
  inf.classes.addEventHandler({ onAdd: sync, onDelete: sync, onUpdate: sync });
  const volumeChanged = (pv: PersistentVolume): void => {
    if (pv.spec?.csi?.driver !== t.driverName) return;
    for (const [key, d] of t.items()) if (volumeAffectsItem(pv, d.item)) t.refreshDirty(key);
  };
  inf.volumes.addEventHandler({ onAdd: volumeChanged, onDelete: volumeChanged });
  const objectChanged = (o: CSIStorageCapacity): void => {
    const item = itemOfObject(o);
    if (!item) return t.sync();
    const key = itemKey(item);
    t.objectSeen(key, o.metadata?.name);
    if (t.items().has(key)) t.refresh(key);
    else t.sync();
  };
  inf.objects.addEventHandler({
    onAdd: (o) => {
      objectChanged(o);
      // It may replace an object kept until it existed (planObsolete).
      t.sync();
    },
    onUpdate: (_, b) => objectChanged(b),
    onDelete: objectChanged,
  });
  // The provisioner gave up on the node the scheduler picked (it removes the selected-node
  // annotation to reschedule, e.g. after ResourceExhausted), or reported a failure.
  inf.claims.addEventHandler({
    onUpdate: (a, b) => {
      const node = a.metadata?.annotations?.[ANN_SELECTED_NODE];
      if (node && !b.metadata?.annotations?.[ANN_SELECTED_NODE] && !b.spec?.volumeName) provisioningFailed(t, b, node);
    },
  });
  const failed = (ev: Event): void => {
    const o = ev.involvedObject;
    // A provisioner records its Events in the claim's namespace; one from elsewhere is not its.
    if (ev.metadata?.namespace !== o?.namespace) return;
    const claim = o?.namespace && o.name ? inf.claims.cache.get(`${o.namespace}/${o.name}`) : undefined;
    if (claim && (!o?.uid || o.uid === claim.metadata?.uid)) provisioningFailed(t, claim, claim.metadata?.annotations?.[ANN_SELECTED_NODE]);
  };
  inf.failures.addEventHandler({ onAdd: failed, onUpdate: (a, b) => (a.count !== b.count || a.lastTimestamp !== b.lastTimestamp || a.series?.count !== b.series?.count ? failed(b) : undefined) });
}

/** Marks the items the failed claim's figure came from for a refresh (coalesced as volume events are). */
function provisioningFailed(t: CapacityTriggerTarget, claim: PersistentVolumeClaim, node: string | undefined): void {
  const cls = claim.spec?.storageClassName;
  if (!cls) return;
  // Per node, this driver measures this node only: another node's failure is its own instance's.
  if (t.onlyNode && node && node !== t.onlyNode) return;
  const labels = node ? t.inf.nodes.cache.get(node)?.metadata?.labels ?? {} : undefined;
  const keys = itemsToRefreshAfterFailure(t.items(), cls, labels);
  if (keys.length === 0) return;
  t.log.debug('provisioning failed: refreshing its capacity', { claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`, node, items: keys.length });
  // Anyone who may write Events or claims in a namespace can report a failure as often as they
  // like (an Event's count, a selected-node toggled): each item takes two such refreshes at once
  // and then one per poll interval, so the driver is asked at most about twice as often as by polls.
  for (const key of keys) if (t.mayRefreshAfterFailure(key)) t.refreshDirty(key);
}
