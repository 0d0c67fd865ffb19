import { ANN_SELECTED_NODE, claimClass, claimNamesOfPod, isDelayedBinding } from '@topovol/shared';
import type { Event, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { nodeRejectsPod } from './node-rejects-pod.js';
import type { RollbackWorld } from './rollback-world.js';

export interface StuckVerdict {
  why: string;
  /** When the evidence was recorded (ms): the node's state counts as now. */
  at: number;
  /** The node's own state (gone, cordoned, tainted), not a report of a failed attempt. */
  nodeState?: true;
}

/**
 * When the failure the Event's message describes was recorded. Not an events.k8s.io/v1 series'
 * lastObservedTime: that recorder keeps the first occurrence's message for the whole series (its
 * repeats may be other errors) and publishes repeats late (every 30 minutes, and some 6 minutes
 * after the series ends: client-go tools/events/event_broadcaster.go), so a repeat from before the
 * last rollback could arrive after it and fire a second rollback on one failure. A failure that
 * goes on is new evidence once it is a new Event (a new series, or a core/v1 recorder's
 * lastTimestamp).
 */
const eventTime = (e: Event): number => Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '') || 0;

/**
 * How far ahead of this process's clock a record's time may be and still count as evidence now:
 * Events carry their writer's clock (a provisioner on another node), which may run a little ahead.
 * A record dated further ahead counts only once this clock is that close to it. Without the bound,
 * one Event stamped far in the future (anyone who may create Events in the namespace can write one)
 * would become the workload's last evidence time, and no genuine failure before that date could
 * roll it back again.
 */
export const EVIDENCE_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The VolumeBinding plugin's reason for nodes that the pod's bound volumes exclude
 * (ErrReasonNodeConflict, pkg/scheduler/framework/plugins/volumebinding/binder.go): "didn't match
 * PersistentVolume's node affinity" since kubernetes/kubernetes#129887 (the pinned v1.37 says
 * this), "had volume node affinity conflict" before it.
 */
const VOLUME_NODE_CONFLICT = /didn't match PersistentVolume's node affinity|volume node affinity conflict/i;

/**
 * Whether the pod has a nominated node, which makes the scheduler's Unschedulable condition (kept
 * until the pod is bound) no evidence: kube-scheduler has found the pod a place since. It nominates
 * the node it preempts pods on for the pod, and the node it is binding the pod to, before its Permit
 * and PreBind plugins run (KEP-5278, NominatedNodeNameForExpectation, on by default since v1.35:
 * pkg/scheduler/schedule_one.go, bindingCycle): while the VolumeBinding plugin waits for a sibling
 * claim to be provisioned and bound on the pinned node, an earlier attempt's condition is stale. It
 * clears the nomination when a binding cycle fails; the API server clears it at the pod's binding.
 * A provisioner's failure and the node's own state still count: each is about now. Anyone else who
 * may write the pod's status can set a nomination too: it only holds a rollback back.
 */
export function nominatedSince(pod: Pod): boolean {
  return !!pod.status?.nominatedNodeName;
}

/**
 * Evidence that the pod cannot run on the node its pinned volumes were provisioned for: the node is
 * gone, cordoned or tainted; a sibling claim failed to provision there (ResourceExhausted seen after
 * that node was selected, or the external provisioner's reschedule signal: selected-node removed
 * after a failure, from a claim of a WaitForFirstConsumer class); or the scheduler reports that the
 * volumes' node affinity excludes the other nodes, unless it has nominated a node for the pod since
 * (nominatedSince). Records (Events, the pod's condition) count only
 * when newer than `notBefore`, the evidence of the workload's last rollback: the same failure never
 * triggers a second rollback; and only when dated no later than `latest` (by default
 * EVIDENCE_CLOCK_SKEW_MS after now), so a rollback's evidence time is never far ahead of its making.
 */
export function cannotRunOn(node: string, pod: Pod, world: RollbackWorld, notBefore: number, latest = world.now() + EVIDENCE_CLOCK_SKEW_MS): StuckVerdict | undefined {
  const counts = (t: number): boolean => t > notBefore && t <= latest;
  const rejected = nodeRejectsPod(node, world.node(node), pod);
  if (rejected) return { why: rejected, at: world.now(), nodeState: true };
  const ns = pod.metadata?.namespace ?? '';
  for (const name of claimNamesOfPod(pod)) {
    const sibling = world.claim(ns, name);
    if (!sibling || sibling.spec?.volumeName) continue;
    const failures = world.provisioningFailures(sibling).filter((e) => counts(eventTime(e)));
    if (failures.length === 0) continue;
    const newest = failures.reduce((a, b) => (eventTime(b) > eventTime(a) ? b : a));
    const selected = sibling.metadata?.annotations?.[ANN_SELECTED_NODE];
    if (!selected) {
      if (mayBeRescheduled(sibling, world)) return { why: `claim ${name} failed to provision and its selected node was removed (${newest.message ?? 'ProvisioningFailed'})`, at: eventTime(newest) };
      continue;
    }
    // Only a failure seen after this selection is about this node: an earlier attempt's (another
    // node's, or an earlier pod's) stays on the claim and does not name its node.
    const exhausted = failures.filter((e) => /ResourceExhausted/i.test(e.message ?? '') && world.failedSinceSelected(sibling, e)).sort((a, b) => eventTime(b) - eventTime(a))[0];
    if (selected === node && exhausted) return { why: `claim ${name} cannot be provisioned on node ${node}: ${exhausted.message}`, at: eventTime(exhausted) };
  }
  const cond = scheduledCondition(pod);
  const condTime = conditionTime(cond);
  if (cond?.status === 'False' && cond.reason === 'Unschedulable' && VOLUME_NODE_CONFLICT.test(cond.message ?? '') && counts(condTime) && !nominatedSince(pod)) {
    return { why: `the scheduler reports: ${cond.message}`, at: condTime };
  }
  return undefined;
}

/**
 * Whether a failed claim with no selected node may be one its provisioner gave back to the
 * scheduler: external-provisioner removes the selected node after a failure it returns
 * ProvisioningReschedule for (ResourceExhausted on that node, or the node or its CSINode not found:
 * pkg/controller/controller.go; the removal in sig-storage-lib-external-provisioner's
 * provisionVolumeErrorHandling), and only from a claim that has one, i.e. of a
 * WaitForFirstConsumer class. A claim of an Immediate class never had one: its failure (bad
 * parameters, a quota, a provisioner down) says nothing about any node, and rolling the pod's other
 * volumes back would not help it. A class not in the cache (deleted, or not seen yet) is not read as
 * delayed: no rollback rests on it.
 */
function mayBeRescheduled(claim: PersistentVolumeClaim, world: RollbackWorld): boolean {
  const name = claimClass(claim);
  return name !== '' && isDelayedBinding(world.storageClass(name));
}

/**
 * The evidence of the earliest record dated beyond `cannotRunOn`'s default bound that would count
 * once the clock comes within EVIDENCE_CLOCK_SKEW_MS of it (its `at` is that record's date), or
 * undefined: the earliest, so that one stamped far ahead cannot hide a nearer one.
 */
export function evidenceAhead(node: string, pod: Pod, world: RollbackWorld, notBefore: number): StuckVerdict | undefined {
  const bound = world.now() + EVIDENCE_CLOCK_SKEW_MS;
  const ns = pod.metadata?.namespace ?? '';
  const siblings = claimNamesOfPod(pod).flatMap((name) => world.claim(ns, name) ?? []);
  const times = [...siblings.flatMap((c) => world.provisioningFailures(c).map(eventTime)), conditionTime(scheduledCondition(pod))];
  const ahead = [...new Set(times.filter((t) => t > bound && t > notBefore))].sort((a, b) => a - b);
  for (const t of ahead) {
    const v = cannotRunOn(node, pod, world, notBefore, t);
    if (v) return v;
  }
  return undefined;
}

type PodCondition = NonNullable<NonNullable<Pod['status']>['conditions']>[number];
const scheduledCondition = (pod: Pod): PodCondition | undefined => pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
const conditionTime = (c: PodCondition | undefined): number => Date.parse(c?.lastTransitionTime ?? c?.lastProbeTime ?? '') || 0;
