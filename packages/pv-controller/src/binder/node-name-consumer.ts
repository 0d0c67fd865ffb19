import { ANN_SELECTED_NODE, doublingBackoffMs, NO_PROVISIONER } from '@topovol/shared';
import type { Node, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction, PlacedPodConfirmation } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { pendingStatus } from './claim-pending.js';
import { kubeletRefusesPlacedPod } from './placed-pod-admission.js';
import { allowedTopologiesMatch, isLivePod } from './selected-node-checks.js';
import { waitForConsumer } from './wait-for-consumer.js';

export interface NodeNameConsumer {
  pod: Pod;
  nodeName: string;
  /** The node from the cache; undefined while it has not been seen (yet). */
  node?: Node;
  /** Why the kubelet will refuse the pod on that node (placed-pod-admission.ts): then nothing is done for it. */
  refused?: string;
}

/** What the server must still show before anything is written for the placed pod (verify-on-server.ts). */
export function placedPodConfirmation(placed: NodeNameConsumer): PlacedPodConfirmation {
  const md = placed.pod.metadata;
  return { namespace: md?.namespace ?? '', name: md?.name ?? '', uid: md?.uid ?? '', nodeName: placed.nodeName };
}

/**
 * A live pod using the delayed-binding claim that was placed with spec.nodeName, bypassing the
 * scheduler (kubernetes #95767, #86262): nobody will pre-bind or select a node for it, so upstream's
 * binder leaves the claim waiting forever while the kubelet waits for the volume. Topovol acts for
 * that pod's node. Pods that terminated (Succeeded, Failed) or are being deleted do not count: they
 * will never use the volume and must not pin it to their old node. Nor does a pod the kubelet will
 * refuse on its node (placed-pod-admission.ts): with only such pods, the first is returned with
 * `refused` set, and nothing is done for it. With several, the first by name.
 *
 * None while a live pod of the claim waits for the scheduler (no spec.nodeName): the scheduler may be
 * pre-binding a volume to the claim at that moment (a write of the volume only, which no
 * precondition on our writes can see), and binding another for the placed pod would leave that one
 * bound to a claim bound elsewhere (released, and deleted if provisioned with Delete). The claim
 * waits for the scheduler's choice, as upstream's does.
 */
export function nodeNameConsumer(claim: PersistentVolumeClaim, world: BinderWorld): NodeNameConsumer | undefined {
  const live = world.podsUsingClaim(claim.metadata?.namespace ?? '', claim.metadata?.name ?? '').filter(isLivePod);
  if (live.some((p) => !p.spec?.nodeName)) return undefined;
  const pods = live.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  let refused: NodeNameConsumer | undefined;
  for (const pod of pods) {
    const nodeName = pod.spec!.nodeName!;
    const node = world.node(nodeName);
    const why = node && kubeletRefusesPlacedPod(pod, node);
    if (!why) return { pod, nodeName, node };
    refused ??= { pod, nodeName, node, refused: why };
  }
  return refused;
}

/** The claim waits as upstream's would: its only hand-placed pods cannot run where they were placed. */
export function refusedPlacedPod(claim: PersistentVolumeClaim, placed: NodeNameConsumer): BinderAction[] {
  const msg = `pod ${placed.pod.metadata?.name} was placed on node "${placed.nodeName}" with spec.nodeName, but ${placed.refused}: the kubelet will refuse it, so no volume is bound or provisioned for it there`;
  return [event(claim, 'Warning', Reasons.NodeNameRefused, msg), ...pendingStatus(claim)];
}

/**
 * No volume on the hand-placed pod's node: select that node for provisioning, as the scheduler
 * would have. A node outside the class's allowedTopologies can never get a volume: say so once
 * (the Event recorder aggregates repeats) and select nothing, instead of selecting a node that the
 * selected-node check would later remove again. A class that does not provision
 * (kubernetes.io/no-provisioner, local volumes) gets no selected node either: the claim keeps
 * waiting, as upstream, and a volume on that node is bound when it appears. A node not seen yet:
 * wait as upstream does.
 */
export function provisionForNodeName(claim: PersistentVolumeClaim, sc: StorageClass, placed: NodeNameConsumer, world: BinderWorld): BinderAction[] {
  const pod = placed.pod.metadata?.name;
  if (!placed.node || sc.provisioner === NO_PROVISIONER) return waitForConsumer(claim, world);
  if (!allowedTopologiesMatch(sc.allowedTopologies, placed.node)) {
    return [
      event(claim, 'Warning', Reasons.NodeNameNotAllowed, `pod ${pod} was placed on node "${placed.nodeName}" with spec.nodeName, outside the allowedTopologies of StorageClass "${sc.metadata?.name}": no volume of this class can be provisioned there`),
      ...pendingStatus(claim),
    ];
  }
  const wait = reselectWaitMs(world.selectedNodeRemovals(claim), world.now());
  if (wait > 0) return [...pendingStatus(claim), { kind: 'requeueAfter', ms: wait }];
  return [
    { kind: 'annotateClaim', claim, set: { [ANN_SELECTED_NODE]: placed.nodeName }, forPlacedPod: placedPodConfirmation(placed) },
    event(claim, 'Normal', Reasons.NodeNameBypassedScheduler, `pod ${pod} runs on node "${placed.nodeName}" without the scheduler (spec.nodeName); selected that node for provisioning`),
    ...pendingStatus(claim),
  ];
}

/** The first wait before selecting a hand-placed pod's node again after the provisioner gave it back. */
export const RESELECT_BACKOFF_INITIAL_MS = 1_000;
/** The longest such wait: kube-scheduler retries an unschedulable pod at least this often (podMaxInUnschedulablePodsDuration). */
export const RESELECT_BACKOFF_MAX_MS = 5 * 60_000;

/**
 * How long to wait before selecting the placed pod's node again, doubling with each time the
 * provisioner removed the selected node (ResourceExhausted on a full node, a node without the
 * driver): re-selecting at once would repeat CreateVolume, the claim's writes and their Events as
 * fast as the two controllers can go. For scheduled pods, kube-scheduler's pod backoff paces this.
 */
export function reselectWaitMs(removals: { count: number; last: number } | undefined, now: number): number {
  if (!removals || removals.count === 0) return 0;
  return Math.max(0, removals.last + doublingBackoffMs(RESELECT_BACKOFF_INITIAL_MS, removals.count, RESELECT_BACKOFF_MAX_MS) - now);
}
