import { nodeSelectorMatches } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  Reasons,
} from './annotations.js';
import type { BinderWorld } from './binder-world.js';
import { claimClass, claimClassUnset, isDelayedBinding } from './claim-helpers.js';
import { volumeMismatch } from './check-volume-satisfies-claim.js';
import { findBestVolume, isPreBoundTo } from './find-matching-volume.js';
import { staleSelectedNode } from './stale-selected-node.js';

const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

function provisioningMessage(provisioner: string): string {
  return `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`;
}

/** allowedTopologies of a class as a node selector (each term ORed, as the scheduler reads it). */
function allowedTopologiesMatch(sc: StorageClass, node: Parameters<typeof nodeSelectorMatches>[1]): boolean {
  const terms = sc.allowedTopologies ?? [];
  if (terms.length === 0) return true;
  return nodeSelectorMatches(
    { nodeSelectorTerms: terms.map((t) => ({ matchExpressions: (t.matchLabelExpressions ?? []).map((e) => ({ key: e.key, operator: 'In', values: e.values })) })) },
    node,
  );
}

const isUnscheduled = (p: Pod): boolean => !p.spec?.nodeName && !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

/**
 * The binder's decision for one claim, mirroring upstream's syncClaim (syncUnboundClaim /
 * syncBoundClaim) plus the delayed-binding rules of seed 001 and the stuck cases of issue #4.
 */
export function decideClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  if (claim.metadata?.deletionTimestamp) return [];
  const ann = claim.metadata?.annotations ?? {};
  if (ann[ANN_BIND_COMPLETED] !== undefined) return decideBoundClaim(claim, world);

  // Retroactive default class: a class-less (nil, not "") unbound claim gets today's default.
  if (claimClassUnset(claim) && !claim.spec?.volumeName) {
    const def = world.defaultStorageClass();
    if (def?.metadata?.name) return [{ kind: 'setClaimClass', claim, storageClassName: def.metadata.name }];
  }
  if (claim.spec?.volumeName) return decidePreBoundClaim(claim, world);

  const cls = claimClass(claim);
  const sc = cls ? world.storageClass(cls) : undefined;
  const delay = isDelayedBinding(sc);
  const ns = claim.metadata?.namespace ?? '';
  const name = claim.metadata?.name ?? '';
  const selected = ann[ANN_SELECTED_NODE];
  const pending = claim.status?.phase === 'Pending' ? [] : [{ kind: 'claimPhase', claim, phase: 'Pending' } as BinderAction];

  let node = undefined as ReturnType<BinderWorld['node']>;
  let bypassNode: string | undefined;
  if (delay && selected) {
    node = world.node(selected);
    if (!node) {
      // sig-storage-lib-external-provisioner #121: nobody would ever provision for a node that is gone.
      return [
        { kind: 'annotateClaim', claim, remove: [ANN_SELECTED_NODE] },
        event(claim, 'Warning', Reasons.SelectedNodeGone, `selected node "${selected}" no longer exists; removed the annotation so that the pod can be scheduled again`),
      ];
    }
    if (sc && !allowedTopologiesMatch(sc, node)) {
      return [
        { kind: 'annotateClaim', claim, remove: [ANN_SELECTED_NODE] },
        event(claim, 'Warning', Reasons.SelectedNodeNotAllowed, `selected node "${selected}" is not in the allowedTopologies of StorageClass "${cls}"; removed the annotation so that the pod can be scheduled again`),
      ];
    }
  } else if (delay) {
    // A pod placed without the scheduler (spec.nodeName set directly): nobody will pre-bind or
    // set selected-node for it, so the binder acts for its node (kubernetes #95767, #86262).
    const placed = world.podsUsingClaim(ns, name).find((p) => p.spec?.nodeName && !p.metadata?.deletionTimestamp);
    if (placed) {
      bypassNode = placed.spec!.nodeName!;
      node = world.node(bypassNode);
    }
  }

  const volume = findBestVolume(claim, world, { delayBinding: delay, node });
  if (volume) {
    return [
      { kind: 'bindVolume', volume, claim, boundByController: !volume.spec?.claimRef },
      { kind: 'bindClaim', claim, volume, boundByController: true },
    ];
  }
  const recheck: BinderAction[] = [];
  if (delay && selected) {
    const verdict = staleSelectedNode(claim, selected, world);
    if (verdict.stale) {
      return [
        { kind: 'annotateClaim', claim, remove: [ANN_SELECTED_NODE] },
        event(claim, 'Normal', Reasons.SelectedNodeStale, `selected node "${selected}" is stale: ${verdict.why}, and no provisioning is under way; removed the annotation so that the next pod is scheduled afresh`),
      ];
    }
    if (verdict.recheckAfterMs !== undefined) recheck.push({ kind: 'requeueAfter', ms: verdict.recheckAfterMs });
  }
  if (delay && bypassNode && node) {
    return [
      { kind: 'annotateClaim', claim, set: { [ANN_SELECTED_NODE]: bypassNode } },
      event(claim, 'Normal', Reasons.NodeNameBypassedScheduler, `a pod using this claim runs on node "${bypassNode}" without the scheduler; selected that node for provisioning`),
      ...pending,
    ];
  }
  if (delay && !node) {
    const waiting = world.podsUsingClaim(ns, name).find(isUnscheduled);
    return [
      ...pending,
      waiting
        ? event(claim, 'Normal', Reasons.WaitForPodScheduled, `waiting for pod ${waiting.metadata?.name} to be scheduled`)
        : event(claim, 'Normal', Reasons.WaitForFirstConsumer, 'waiting for first consumer to be created before binding'),
    ];
  }
  if (!cls) {
    return [...pending, event(claim, 'Normal', Reasons.FailedBinding, 'no persistent volumes available for this claim and no storage class is set')];
  }
  if (!sc) {
    return [...pending, event(claim, 'Warning', 'ProvisioningFailed', `storageclass.storage.k8s.io "${cls}" not found`), ...recheck];
  }
  if (sc.provisioner === NO_PROVISIONER) {
    return [...pending, event(claim, 'Normal', Reasons.FailedBinding, `no persistent volumes available for this claim and StorageClass "${cls}" does not provision (${NO_PROVISIONER})`), ...recheck];
  }
  const actions: BinderAction[] = [...pending];
  if (ann[ANN_STORAGE_PROVISIONER] !== sc.provisioner || ann[ANN_BETA_STORAGE_PROVISIONER] !== sc.provisioner) {
    actions.push({ kind: 'annotateClaim', claim, set: { [ANN_STORAGE_PROVISIONER]: sc.provisioner, [ANN_BETA_STORAGE_PROVISIONER]: sc.provisioner } });
  }
  actions.push(event(claim, 'Normal', Reasons.ExternalProvisioning, provisioningMessage(sc.provisioner)), ...recheck);
  return actions;
}

/** A claim naming its volume (by a user, or a bind of ours that did not finish). */
function decidePreBoundClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const volumeName = claim.spec!.volumeName!;
  const volume = world.volume(volumeName);
  const pending = claim.status?.phase === 'Pending' ? [] : [{ kind: 'claimPhase', claim, phase: 'Pending' } as BinderAction];
  // Upstream waits silently for a named volume that does not exist yet.
  if (!volume) return pending;
  const claimBoundByController = claim.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] !== undefined;
  if (!volume.spec?.claimRef || isPreBoundTo(volume, claim)) {
    if (!volume.spec?.claimRef) {
      const why = volumeMismatch(claim, volume);
      if (why) return [...pending, event(claim, 'Warning', Reasons.VolumeMismatch, `Cannot bind to requested volume "${volumeName}": ${why}`)];
    }
    return [
      { kind: 'bindVolume', volume, claim, boundByController: !volume.spec?.claimRef },
      { kind: 'bindClaim', claim, volume, boundByController: claimBoundByController },
    ];
  }
  return [...pending, event(claim, 'Warning', Reasons.FailedBinding, `volume "${volumeName}" already bound to a different claim.`)];
}

/** A claim whose binding completed once: keep it Bound, or declare it Lost. */
function decideBoundClaim(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const lost = (reason: string, message: string): BinderAction[] =>
    claim.status?.phase === 'Lost' ? [] : [{ kind: 'claimPhase', claim, phase: 'Lost' }, event(claim, 'Warning', reason, message)];
  const volumeName = claim.spec?.volumeName;
  if (!volumeName) return lost(Reasons.ClaimLost, 'Bound claim has lost its PersistentVolume. Data on the volume is lost!');
  const volume = world.volume(volumeName);
  if (!volume) return lost(Reasons.ClaimLost, 'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!');
  if (!volume.spec?.claimRef) {
    // Our PV write was lost (or undone): bind it again.
    return [
      { kind: 'bindVolume', volume, claim, boundByController: true },
      { kind: 'bindClaim', claim, volume, boundByController: claim.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] !== undefined },
    ];
  }
  if (volume.spec.claimRef.uid === claim.metadata?.uid) {
    const actions: BinderAction[] = [];
    if (volume.status?.phase !== 'Bound') actions.push({ kind: 'volumePhase', volume, phase: 'Bound' });
    if (claim.status?.phase !== 'Bound' || !claim.status.capacity?.storage) actions.push({ kind: 'claimPhase', claim, phase: 'Bound', volume });
    return actions;
  }
  return lost(Reasons.ClaimMisbound, 'Two claims are bound to the same volume, this one is bound incorrectly');
}
