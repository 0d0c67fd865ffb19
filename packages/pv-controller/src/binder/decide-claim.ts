import { ANN_BIND_COMPLETED, ANN_SELECTED_NODE, CLAIM_SELECTOR_KEPT, selectorTooLargeToCache } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { claimClass, claimClassUnset, isDelayedBinding } from './claim-helpers.js';
import { claimMigrationChange } from './csi-migration.js';
import { pendingStatus } from './claim-pending.js';
import { provisionClaim } from './claim-provisioning.js';
import { decideBoundClaim } from './decide-bound-claim.js';
import { decidePreBoundClaim } from './decide-pre-bound-claim.js';
import { deletingClaimConfirmation, freeVolumeHeldBack } from './deleting-claim.js';
import { findBestVolume } from './find-matching-volume.js';
import { bindingUnfinished } from './orphaned-bind.js';
import { nodeNameConsumer, placedPodConfirmation, provisionForNodeName, refusedPlacedPod } from './node-name-consumer.js';
import { checkSelectedNode } from './selected-node-checks.js';
import { heldForAnother } from './volume-hold.js';
import { waitForConsumer } from './wait-for-consumer.js';

/**
 * The binder's decision for one claim, mirroring upstream's syncClaim in
 * pkg/controller/volume/persistentvolume/pv_controller.go (syncUnboundClaim, syncBoundClaim), plus
 * what Topovol does where upstream leaves a claim stuck (docs/divergences.md): pods placed with
 * spec.nodeName (kubernetes #95767) and stale selected nodes (kubernetes #112347).
 */
export function decideClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  // A claim being deleted is synced like any other, as upstream does: a pod may still use it (the
  // protection controller keeps it), and its volume must stay bound to it meanwhile. A free volume
  // is given to it only for a pod already placed on a node (deleting-claim.ts).
  const migration = claimMigrationChange(claim);
  if (migration) return [{ kind: 'annotateClaim', claim, ...migration }];
  if (claim.metadata?.annotations?.[ANN_BIND_COMPLETED] !== undefined) return decideBoundClaim(claim, world);
  if (claim.spec?.volumeName) return decidePreBoundClaim(claim, world);
  const plan = decideUnboundClaim(claim, world);
  // Topovol: a selector too large to cache matches no free volume (docs/divergences.md, "What is
  // cached of a claim"); the claim says so rather than wait in silence.
  if (selectorTooLargeToCache(claim.spec?.selector) && !plan.some((a) => a.kind === 'bindVolume')) {
    return [event(claim, 'Warning', Reasons.SelectorTooLarge, `spec.selector is larger than Topovol caches (${CLAIM_SELECTOR_KEPT} bytes as JSON): no existing volume is matched to this claim`), ...plan];
  }
  return plan;
}

/** A claim that names no volume: match one, or ask for provisioning, or wait for a consumer. */
function decideUnboundClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const cls = claimClass(claim);
  const sc = cls ? world.storageClass(cls) : undefined;
  // Topovol: a binding mode it does not know (a newer API's, or an object that skipped validation)
  // leaves the claim Pending and says so; upstream binds it as Immediate, which may place a volume
  // where the pod cannot run. Unset is the API's default, Immediate.
  const mode = sc?.volumeBindingMode ?? 'Immediate';
  if (mode !== 'Immediate' && mode !== 'WaitForFirstConsumer') {
    return [event(claim, 'Warning', Reasons.UnknownBindingMode, `StorageClass "${cls}" has volumeBindingMode "${mode}", neither Immediate nor WaitForFirstConsumer: the claim is left Pending`), ...pendingStatus(claim)];
  }
  const delay = isDelayedBinding(sc);
  const selected = claim.metadata?.annotations?.[ANN_SELECTED_NODE];
  // Topovol: a consumer placed without the scheduler stands in for its selected node; not for a
  // claim being deleted, whose volume would be Released once the pod goes (upstream, which never
  // acts for a placed pod, waits for a consumer there too).
  const found = delay && selected === undefined && !claim.metadata?.deletionTimestamp ? nodeNameConsumer(claim, world) : undefined;
  const placed = found?.refused ? undefined : found;

  // With a selected node and no consumer placed by hand, only a volume pre-bound to the claim (by
  // the scheduler or a provisioner) qualifies: the scheduler chose provisioning, and a volume may be
  // being created for it right now.
  const volume = findBestVolume(claim, world, { delayBinding: delay, node: placed?.node, heldForAnother: (v: PersistentVolume) => heldForAnother(v, claim, world) });
  // Topovol: no free volume for a claim being deleted that no placed pod uses (deleting-claim.ts),
  // nor the completion of a binding that never reached it (a restart between the writes, or
  // kube-scheduler's pre-binding): once the claim goes, that volume is taken back
  // (orphaned-bind.ts). A volume otherwise pre-bound to the claim is bound as upstream.
  const free = volume !== undefined && (!volume.spec?.claimRef || bindingUnfinished(volume));
  if (free && freeVolumeHeldBack(claim, world)) return pendingStatus(claim);
  if (volume) {
    // Chosen for the placed pod's node: that pod is read live before the volume is written.
    const forPlacedPod = placed ? { forPlacedPod: placedPodConfirmation(placed) } : {};
    const forDeletingClaim = free ? deletingClaimConfirmation(claim) : {};
    return [
      { kind: 'bindVolume', volume, claim, boundByController: !volume.spec?.claimRef, ...forPlacedPod, ...forDeletingClaim },
      { kind: 'bindClaim', claim, volume, boundByController: true },
    ];
  }
  // Retroactive default class (KEP-3333): only once no volume matched the class-less claim.
  if (claimClassUnset(claim)) {
    const def = world.defaultStorageClass();
    if (def?.metadata?.name) return [{ kind: 'setClaimClass', claim, storageClassName: def.metadata.name }];
  }
  if (delay && selected === undefined) {
    if (placed) return provisionForNodeName(claim, sc!, placed, world);
    if (found) return refusedPlacedPod(claim, found);
    return waitForConsumer(claim, world);
  }
  if (cls !== '') {
    const check = delay && selected !== undefined ? checkSelectedNode(claim, selected, sc, world) : [];
    // Removing the selected node sends the pod back to the scheduler: no provisioning to ask for.
    if (check.some((a) => a.kind === 'annotateClaim')) return check;
    return [...provisionClaim(claim, cls, sc), ...check];
  }
  return [event(claim, 'Normal', Reasons.FailedBinding, 'no persistent volumes available for this claim and no storage class is set'), ...pendingStatus(claim)];
}
