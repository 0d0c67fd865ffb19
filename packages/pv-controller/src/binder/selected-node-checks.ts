import { ANN_SELECTED_NODE, claimNamesOfPod, isPodTerminated, nodeSelectorMatches } from '@topovol/shared';
import type { Node, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction, SelectedNodeConfirmation, SelectedNodeProblem } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';

/** Why a claim's volume.kubernetes.io/selected-node may be stale. */
export type SelectedNodeIssue = 'gone' | 'notAllowed' | 'noConsumer';

/** A problem as the loop remembers it, with the node it was seen with, in one string (FirstSeen compares values with ===). */
export type SelectedNodeIssueSeen = `${SelectedNodeIssue} ${string}`;

export const issueSeen = (issue: SelectedNodeIssue, node: string): SelectedNodeIssueSeen => `${issue} ${node}`;

export function parseIssueSeen(v: SelectedNodeIssueSeen): { issue: SelectedNodeIssue; node: string } {
  const i = v.indexOf(' ');
  return { issue: v.slice(0, i) as SelectedNodeIssue, node: v.slice(i + 1) };
}

/**
 * allowedTopologies of a class as a node selector (each term ORed, as the scheduler reads it:
 * MatchTopologySelectorTerms in k8s.io/kubernetes/pkg/apis/core/v1/helper builds each term with
 * labels.NewRequirement too, so an empty term or an invalid value reaches no node).
 */
export function allowedTopologiesMatch(allowed: StorageClass['allowedTopologies'], node: Node): boolean {
  const terms = allowed ?? [];
  if (terms.length === 0) return true;
  return nodeSelectorMatches(
    { nodeSelectorTerms: terms.map((t) => ({ matchExpressions: (t.matchLabelExpressions ?? []).map((e) => ({ key: e.key, operator: 'In', values: e.values })) })) },
    node,
  );
}

/** A pod that still counts: not terminated and not being deleted. */
export const isLivePod = (p: Pod): boolean => !isPodTerminated(p) && !p.metadata?.deletionTimestamp;

/**
 * Whether some live pod using the claim could still want provisioning on `selected`: one not yet
 * scheduled (it may be the scheduler's current attempt) or one placed there.
 */
export function someConsumerFits(pods: Pod[], claim: PersistentVolumeClaim, selected: string): boolean {
  const name = claim.metadata?.name ?? '';
  return pods.some((p) => p.metadata?.namespace === claim.metadata?.namespace && claimNamesOfPod(p).includes(name) && isLivePod(p) && (!p.spec?.nodeName || p.spec.nodeName === selected));
}

function findIssue(claim: PersistentVolumeClaim, selected: string, sc: StorageClass | undefined, world: BinderWorld): SelectedNodeProblem | undefined {
  const node = world.node(selected);
  if (!node) return { issue: 'gone', node: selected };
  if (sc?.allowedTopologies?.length && !allowedTopologiesMatch(sc.allowedTopologies, node)) return { issue: 'notAllowed', node: selected, allowedTopologies: sc.allowedTopologies };
  const pods = world.podsUsingClaim(claim.metadata?.namespace ?? '', claim.metadata?.name ?? '');
  if (!someConsumerFits(pods, claim, selected)) return { issue: 'noConsumer', node: selected };
  return undefined;
}

function stripEvent(claim: PersistentVolumeClaim, found: SelectedNodeProblem, cls: string, world: BinderWorld): BinderAction {
  const node = found.node;
  switch (found.issue) {
    case 'gone':
      return event(claim, 'Warning', Reasons.SelectedNodeGone, `selected node "${node}" no longer exists; removed the annotation so that the pod can be scheduled again`);
    case 'notAllowed':
      return event(claim, 'Warning', Reasons.SelectedNodeNotAllowed, `selected node "${node}" is not in the allowedTopologies of StorageClass "${cls}"; removed the annotation so that the pod can be scheduled again`);
    case 'noConsumer': {
      const elsewhere = world
        .podsUsingClaim(claim.metadata?.namespace ?? '', claim.metadata?.name ?? '')
        .filter(isLivePod)
        .map((p) => `${p.metadata?.name} on ${p.spec?.nodeName}`);
      const why = elsewhere.length > 0 ? `its pods run elsewhere (${elsewhere.join(', ')})` : 'no pod uses the claim any more';
      return event(claim, 'Normal', Reasons.SelectedNodeStale, `selected node "${node}" is stale: ${why}, and no provisioning is under way; removed the annotation so that the next pod is scheduled afresh`);
    }
  }
}

/**
 * A delayed-binding claim's selected node that nobody will provision on: the node is gone
 * (sig-storage-lib-external-provisioner #121), outside the class's allowedTopologies, or no pod that
 * could use it is left (kubernetes #112347: the pod was deleted or placed elsewhere). Upstream's
 * binder leaves such a claim stuck. Topovol removes the annotation, but only when the same problem
 * with the same node has been seen for the whole grace period, the external provisioner has shown
 * no activity on the claim (its per-attempt `Provisioning` Event) ever, or for a node that is gone
 * for the grace period, and the loop has re-read the node (or the namespace's pods) and the
 * claim's Provisioning Events from the server: a cache that lags is never enough.
 * The caller has already bound a volume pre-bound to the claim that fits it; one made for the claim
 * that does not fit keeps the node too (provisioning finished). The removal's server read looks
 * for one under the names provisioners give it (--provisioned-volume-names, verify-on-server.ts).
 * Returns the actions to take now: remember the problem, wait, or remove the annotation.
 */
export function checkSelectedNode(claim: PersistentVolumeClaim, selected: string, sc: StorageClass | undefined, world: BinderWorld): BinderAction[] {
  const found = findIssue(claim, selected, sc, world);
  const remembered = world.selectedNodeIssue(claim);
  const now = world.now();
  const actions: BinderAction[] = [];
  // The same problem with the same node: a node selected again since starts its own clock.
  const same = found !== undefined && remembered?.issue === found.issue && remembered.node === found.node;
  if (!same && (found || remembered)) actions.push({ kind: 'noteSelectedNodeIssue', claim, issue: found?.issue, node: selected, at: now });
  const grace = world.staleSelectedNodeGraceMs;
  if (!found || !(grace >= 0)) return actions;
  // A volume made for the claim that it cannot take (being deleted; another volume mode or
  // attributes class asked since) is not bound, yet provisioning did finish: the node stays.
  const uid = claim.metadata?.uid;
  if (uid && world.preBoundVolumes(claim.metadata?.namespace ?? '', claim.metadata?.name ?? '').some((v) => v.spec?.claimRef?.uid === uid)) return actions;
  const activity = world.lastProvisioningActivity(claim);
  // Once the provisioner has tried, a CreateVolume may have made the volume (a call that timed
  // out, or a provisioner that died before writing the PV): only that provisioner can finish it
  // (it retries while the annotation is there) or give the node back on a final error. Removing the
  // annotation under it would leave that volume without a PV. Only a node that is gone is let go
  // after a grace with no activity, as the provisioner itself does when it finds the node missing
  // (sig-storage-lib-external-provisioner #121).
  if (activity !== undefined && found.issue !== 'gone') return actions;
  const since = Math.max(same ? remembered.since : now, activity ?? -Infinity);
  const left = since + grace - now;
  if (left > 0) return [...actions, { kind: 'requeueAfter', ms: left }];
  // The server's Events must agree: none newer than the grace for a node that is gone, none at all otherwise.
  const confirm: SelectedNodeConfirmation = { ...found, quietSince: found.issue === 'gone' ? now - grace : -Infinity };
  return [...actions, { kind: 'annotateClaim', claim, remove: [ANN_SELECTED_NODE], confirm }, stripEvent(claim, found, sc?.metadata?.name ?? '', world)];
}
