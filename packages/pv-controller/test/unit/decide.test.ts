import { expect } from 'chai';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume, releaseOf } from '../../src/binder/decide-volume.js';
import { provisionClaim } from '../../src/binder/claim-provisioning.js';
import { summary } from './decision-summary.js';
import { claim, node, pod, sc, vol, world } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';

const WFFC = { volumeBindingMode: 'WaitForFirstConsumer' };
const SEL = 'volume.kubernetes.io/selected-node';
const PROV = 'volume.kubernetes.io/storage-provisioner,volume.beta.kubernetes.io/storage-provisioner';
const bound = { 'pv.kubernetes.io/bind-completed': 'yes' };
const signal = [`annotate ${PROV}`, 'event Normal ExternalProvisioning'];
const defaultClass = sc('d', { metadata: { name: 'd', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } });
const zoneA = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] } };
const zoneB = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }] } };

interface ClaimCase {
  name: string;
  claim: ReturnType<typeof claim>;
  w: WorldInput;
  want: string[];
}

// kubernetes #112347 and its kin: a selected node nobody will provision on is removed, but only after
// the grace period, with no provisioner activity, and confirmed on the server by the actuator.
function selectedNodeCases(): ClaimCase[] {
  const selected = claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } });
  const base: WorldInput = { classes: [sc('late', WFFC)], nodes: [node('n1'), node('n2')], now: 1_000_000, graceMs: 60_000 };
  const terminated = pod('done', 'c', 'n1', 'Succeeded');
  const deleting = { ...pod('going', 'c', 'n1'), metadata: { name: 'going', namespace: 'ns', deletionTimestamp: '2026-01-01T00:00:00Z' } };
  const noted = (issue: 'gone' | 'notAllowed' | 'noConsumer', since: number, node = 'n1'): WorldInput['noted'] => ({ issue, node, since });
  const limited = sc('late', { ...WFFC, allowedTopologies: [{ matchLabelExpressions: [{ key: 'zone', values: ['a'] }] }] });
  return [
    { name: 'no pod, first seen → note it and wait out the grace', claim: selected, w: base, want: [...signal, 'note noConsumer', 'requeueAfter 60000'] },
    { name: 'no pod for 30s of 60s → wait the rest', claim: selected, w: { ...base, noted: noted('noConsumer', 970_000) }, want: [...signal, 'requeueAfter 30000'] },
    { name: 'no pod for the grace → removed, confirmed on the server', claim: selected, w: { ...base, noted: noted('noConsumer', 900_000) }, want: [`annotate  -${SEL} (confirm noConsumer)`, 'event Normal SelectedNodeStale'] },
    { name: 'pod placed on another node for the grace → removed', claim: selected, w: { ...base, noted: noted('noConsumer', 900_000), pods: [pod('p2', 'c', 'n2')] }, want: [`annotate  -${SEL} (confirm noConsumer)`, 'event Normal SelectedNodeStale'] },
    { name: 'terminated or deleting pods count as none', claim: selected, w: { ...base, noted: noted('noConsumer', 900_000), pods: [terminated, deleting] }, want: [`annotate  -${SEL} (confirm noConsumer)`, 'event Normal SelectedNodeStale'] },
    { name: 'provisioner active 10s ago → kept, left to the provisioner', claim: selected, w: { ...base, noted: noted('noConsumer', 900_000), provisioningActivity: 990_000 }, want: signal },
    { name: 'provisioner active long before the grace → still kept: a CreateVolume may have made the volume', claim: selected, w: { ...base, noted: noted('noConsumer', 0), provisioningActivity: 0 }, want: signal },
    { name: 'the problem noted with another node (a node selected again since) → its clock restarts', claim: selected, w: { ...base, noted: noted('noConsumer', 0, 'n2') }, want: [...signal, 'note noConsumer', 'requeueAfter 60000'] },
    { name: 'an unscheduled pod (the scheduler may be binding it) → kept, problem forgotten', claim: selected, w: { ...base, noted: noted('noConsumer', 900_000), pods: [pod('p', 'c')] }, want: [...signal, 'note none'] },
    { name: 'a pod on the selected node → kept', claim: selected, w: { ...base, pods: [pod('p', 'c', 'n1')] }, want: signal },
    { name: 'a negative grace disables removal', claim: selected, w: { ...base, noted: noted('noConsumer', 0), graceMs: -1 }, want: signal },
    {
      name: 'a provisioned volume pre-bound to the claim is bound, nothing removed',
      claim: selected,
      w: { ...base, noted: noted('noConsumer', 0), volumes: [vol('pv', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } })] },
      want: ['bindVolume pv', 'bindClaim pv'],
    },
    {
      // Being deleted, it does not fit the claim (not bound); it was made for it all the same.
      name: 'node missing for the grace, a volume made for the claim that it cannot take (being deleted) → kept',
      claim: selected,
      w: { ...base, nodes: [], pods: [pod('p', 'c')], noted: noted('gone', 900_000), volumes: [vol('foo-c', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, deleting: true })] },
      want: signal,
    },
    {
      name: 'no pod for the grace, a volume pre-bound to another claim of that name (another uid) → removed as without it',
      claim: selected,
      w: { ...base, noted: noted('noConsumer', 900_000), volumes: [vol('old', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-old' } })] },
      want: [`annotate  -${SEL} (confirm noConsumer)`, 'event Normal SelectedNodeStale'],
    },
    { name: 'node missing from the cache, first seen → kept (a lagging cache is no evidence)', claim: selected, w: { ...base, nodes: [], pods: [pod('p', 'c')] }, want: [...signal, 'note gone', 'requeueAfter 60000'] },
    { name: 'node missing for the grace → removed, confirmed on the server', claim: selected, w: { ...base, nodes: [], pods: [pod('p', 'c')], noted: noted('gone', 900_000) }, want: [`annotate  -${SEL} (confirm gone)`, 'event Warning SelectedNodeGone'] },
    { name: 'node missing for the grace but the provisioner is working → kept', claim: selected, w: { ...base, nodes: [], noted: noted('gone', 900_000), provisioningActivity: 999_000 }, want: [...signal, 'requeueAfter 59000'] },
    { name: 'node missing, the provisioner active only before the grace → removed (it does the same when it finds the node gone)', claim: selected, w: { ...base, nodes: [], noted: noted('gone', 0), provisioningActivity: 0 }, want: [`annotate  -${SEL} (confirm gone)`, 'event Warning SelectedNodeGone'] },
    { name: 'node outside allowedTopologies, the provisioner tried before → kept, left to it', claim: selected, w: { ...base, classes: [limited], nodes: [node('n1', { zone: 'b' })], pods: [pod('p', 'c')], noted: noted('notAllowed', 0), provisioningActivity: 0 }, want: signal },
    { name: 'node outside allowedTopologies, first seen → kept', claim: selected, w: { ...base, classes: [limited], nodes: [node('n1', { zone: 'b' })], pods: [pod('p', 'c')] }, want: [...signal, 'note notAllowed', 'requeueAfter 60000'] },
    { name: 'node outside allowedTopologies for the grace → removed, confirmed on the server', claim: selected, w: { ...base, classes: [limited], nodes: [node('n1', { zone: 'b' })], pods: [pod('p', 'c')], noted: noted('notAllowed', 0) }, want: [`annotate  -${SEL} (confirm notAllowed)`, 'event Warning SelectedNodeNotAllowed'] },
    { name: 'the problem changed (node gone → no consumer): its clock restarts', claim: selected, w: { ...base, noted: noted('gone', 0) }, want: [...signal, 'note noConsumer', 'requeueAfter 60000'] },
    { name: 'with a selected node, a free volume is never bound (the scheduler chose provisioning)', claim: selected, w: { ...base, pods: [pod('p', 'c')], volumes: [vol('free', '1Gi', { storageClassName: 'late' })] }, want: signal },
  ].map((c) => ({ ...c, name: `selected node: ${c.name}` }));
}

const deletingClaim = (c: PersistentVolumeClaim): PersistentVolumeClaim => ({ ...c, metadata: { ...c.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] } });

// kubernetes #95767: pods placed with spec.nodeName, which no scheduler pre-binds for.
function nodeNameCases(): ClaimCase[] {
  const c = claim('c', '1Gi', { storageClassName: 'late' });
  const base: WorldInput = { classes: [sc('late', WFFC)], nodes: [node('n1', { zone: 'a' })] };
  const limited = sc('late', { ...WFFC, allowedTopologies: [{ matchLabelExpressions: [{ key: 'zone', values: ['b'] }] }] });
  return [
    { name: 'binds a volume reachable from that node', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')], volumes: [vol('far', '1Gi', { storageClassName: 'late', nodeAffinity: zoneB }), vol('near', '2Gi', { storageClassName: 'late', nodeAffinity: zoneA })] }, want: ['bindVolume near (for placed p on n1)', 'bindClaim near'] },
    { name: 'no volume: selects its node', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')] }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    // The provisioner gave the node back (ResourceExhausted, no driver there): not selected again at once, or the two loops would spin.
    { name: 'node given back once, 0.4 s ago: wait out the rest of the first second', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')], selectedNodeRemovals: { count: 1, last: 999_600 } }, want: ['requeueAfter 600'] },
    { name: 'node given back once, 1 s ago: selected again', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')], selectedNodeRemovals: { count: 1, last: 999_000 } }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'node given back 4 times, last 5 s ago: the wait doubles to 8 s', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')], selectedNodeRemovals: { count: 4, last: 995_000 } }, want: ['requeueAfter 3000'] },
    { name: 'node given back 20 times: the wait stops growing at 5 minutes', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1')], selectedNodeRemovals: { count: 20, last: 1_000_000 } }, want: ['requeueAfter 300000'] },
    { name: 'a Succeeded pod does not pin the claim', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1', 'Succeeded')] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'a Failed pod does not pin the claim', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1', 'Failed')] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'node outside allowedTopologies: one Warning, nothing selected', claim: c, w: { ...base, classes: [limited], pods: [pod('p', 'c', 'n1')] }, want: ['event Warning NodeNotAllowedByStorageClass'] },
    { name: 'node not seen yet: wait as upstream', claim: c, w: { ...base, nodes: [], pods: [pod('p', 'c', 'n1')] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'node not seen yet, another pod unscheduled: WaitForPodScheduled as upstream', claim: c, w: { ...base, nodes: [], pods: [pod('p', 'c', 'n1'), pod('q', 'c')] }, want: ['event Normal WaitForPodScheduled'] },
    // The scheduler may be pre-binding a volume to the claim for the pod that waits for it (it writes
    // the volume alone): a volume bound for the placed pod meanwhile would leave that one bound to a
    // claim bound elsewhere. The scheduler's choice decides, as upstream.
    { name: 'another pod of the claim waits for the scheduler: no volume bound for the placed pod, wait as upstream', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1'), pod('q', 'c')], volumes: [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })] }, want: ['event Normal WaitForPodScheduled'] },
    { name: 'another pod of the claim waits for the scheduler: no node selected for the placed pod, wait as upstream', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1'), pod('q', 'c')] }, want: ['event Normal WaitForPodScheduled'] },
    { name: 'an unscheduled pod of the claim that ended does not hold the placed pod back', claim: c, w: { ...base, pods: [pod('p', 'c', 'n1'), pod('q', 'c', undefined, 'Failed')], volumes: [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })] }, want: ['bindVolume near (for placed p on n1)', 'bindClaim near'] },
    { name: 'a class that does not provision: no selected node, wait as upstream', claim: claim('c', '1Gi', { storageClassName: 'local' }), w: { ...base, classes: [sc('local', { ...WFFC, provisioner: 'kubernetes.io/no-provisioner' })], pods: [pod('p', 'c', 'n1')] }, want: ['event Normal WaitForFirstConsumer'] },
    // A claim being deleted (pvc-protection holds it while the placed pod exists): a volume bound
    // now would be Released, or deleted, once the pod goes. Upstream waits (it never acts for a
    // placed pod); so does Topovol.
    { name: 'a claim being deleted: no volume bound for the placed pod, wait as upstream', claim: deletingClaim(c), w: { ...base, pods: [pod('p', 'c', 'n1')], volumes: [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'a claim being deleted: no node selected for the placed pod, wait as upstream', claim: deletingClaim(c), w: { ...base, pods: [pod('p', 'c', 'n1')] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'a claim being deleted: a volume pre-bound to it is still bound, as upstream', claim: deletingClaim(c), w: { ...base, pods: [pod('p', 'c', 'n1')], volumes: [vol('pre', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA, claimRef: { namespace: 'ns', name: 'c' } })] }, want: ['bindVolume pre', 'bindClaim pre'] },
    // The kubelet refuses a pod whose node does not match its nodeSelector or required node
    // affinity, or that does not tolerate a NoExecute taint there: nothing is bound or selected for it.
    ...refusedPlacedPods(c, base),
    {
      name: 'a class that does not provision: the volume on that node is bound when it appears',
      claim: claim('c', '1Gi', { storageClassName: 'local' }),
      w: { ...base, classes: [sc('local', { ...WFFC, provisioner: 'kubernetes.io/no-provisioner' })], pods: [pod('p', 'c', 'n1')], volumes: [vol('on-a', '1Gi', { storageClassName: 'local', nodeAffinity: zoneA })] },
      want: ['bindVolume on-a (for placed p on n1)', 'bindClaim on-a'],
    },
    {
      name: 'a single pre-bound volume its node cannot reach is still the claim\'s (upstream binds it; nothing else may take its place)',
      claim: c,
      w: { ...base, pods: [pod('p', 'c', 'n1')], volumes: [vol('far', '1Gi', { storageClassName: 'late', nodeAffinity: zoneB, claimRef: { namespace: 'ns', name: 'c' } })] },
      want: ['bindVolume far (for placed p on n1)', 'bindClaim far'],
    },
    {
      name: 'an unreachable pre-bound volume does not hide a reachable one',
      claim: c,
      w: { ...base, pods: [pod('p', 'c', 'n1')], volumes: [vol('a-far', '1Gi', { storageClassName: 'late', nodeAffinity: zoneB, claimRef: { namespace: 'ns', name: 'c' } }), vol('b-near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA, claimRef: { namespace: 'ns', name: 'c' } })] },
      want: ['bindVolume b-near (for placed p on n1)', 'bindClaim b-near'],
    },
  ].map((x) => ({ ...x, name: `spec.nodeName: ${x.name}` }));
}

function refusedPlacedPods(c: PersistentVolumeClaim, base: WorldInput): ClaimCase[] {
  const placed = (spec: Partial<NonNullable<Pod['spec']>>, name = 'p'): Pod => {
    const p = pod(name, 'c', 'n1');
    return { ...p, spec: { ...p.spec!, ...spec } };
  };
  const tainted: WorldInput = { ...base, nodes: [{ ...node('n1', { zone: 'a' }), spec: { taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }] } }] };
  const free = [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })];
  return [
    { name: 'nodeSelector the node does not match: a Warning, no volume bound although one is free there', claim: c, w: { ...base, pods: [placed({ nodeSelector: { zone: 'b' } })], volumes: free }, want: ['event Warning PlacedPodRefusedByNode'] },
    { name: 'required node affinity the node does not match: a Warning, no node selected', claim: c, w: { ...base, pods: [placed({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: zoneB.required } } })] }, want: ['event Warning PlacedPodRefusedByNode'] },
    { name: 'a NoExecute taint it does not tolerate: a Warning, no node selected', claim: c, w: { ...tainted, pods: [placed({})] }, want: ['event Warning PlacedPodRefusedByNode'] },
    { name: 'a NoExecute taint it tolerates: its node is selected', claim: c, w: { ...tainted, pods: [placed({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] })] }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'a NoSchedule taint does not stop the kubelet: its node is selected', claim: c, w: { ...base, nodes: [{ ...node('n1', { zone: 'a' }), spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } }], pods: [placed({})] }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'matching nodeSelector and affinity: the free volume there is bound', claim: c, w: { ...base, pods: [placed({ nodeSelector: { zone: 'a' }, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: zoneA.required } } })], volumes: free }, want: ['bindVolume near (for placed p on n1)', 'bindClaim near'] },
    { name: 'a pod the kubelet took before the node changed (container statuses written): not refused, its node selected', claim: c, w: { ...base, pods: [{ ...placed({ nodeSelector: { zone: 'b' } }), status: { phase: 'Pending', containerStatuses: [{ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] } }] }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'a toleration with an operator the check does not judge (Gt): not refused', claim: c, w: { ...tainted, pods: [placed({ tolerations: [{ key: 'other', operator: 'Gt', value: '1' }] })] }, want: [`annotate ${SEL} (for placed p on n1)`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'a refused pod and an admitted one: the admitted one counts', claim: c, w: { ...base, pods: [placed({ nodeSelector: { zone: 'b' } }, 'a-refused'), placed({}, 'b-fine')] }, want: [`annotate ${SEL} (for placed b-fine on n1)`, 'event Normal ScheduledWithoutScheduler'] },
  ];
}

describe('decideClaim', function () {
  const cases: ClaimCase[] = [
    { name: 'binds the best volume', claim: claim('c', '1Gi'), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'class "" with no volume: FailedBinding', claim: claim('c', '1Gi'), w: {}, want: ['event Normal FailedBinding'] },
    { name: 'class with no volume: provisioning signal, status untouched', claim: claim('c', '1Gi', { storageClassName: 'fast' }), w: { classes: [sc('fast')] }, want: signal },
    { name: 'already signalled: only the Event', claim: claim('c', '1Gi', { storageClassName: 'fast', annotations: { 'volume.kubernetes.io/storage-provisioner': 'example.com/csi', 'volume.beta.kubernetes.io/storage-provisioner': 'example.com/csi' } }), w: { classes: [sc('fast')] }, want: ['event Normal ExternalProvisioning'] },
    { name: 'GA annotation set, beta missing: not rewritten (upstream reads the GA one)', claim: claim('c', '1Gi', { storageClassName: 'fast', annotations: { 'volume.kubernetes.io/storage-provisioner': 'example.com/csi' } }), w: { classes: [sc('fast')] }, want: ['event Normal ExternalProvisioning'] },
    { name: 'selector does not stop the signal', claim: claim('c', '1Gi', { storageClassName: 'fast', selector: { matchLabels: { a: 'b' } } }), w: { classes: [sc('fast')] }, want: signal },
    { name: 'missing class object: ProvisioningFailed', claim: claim('c', '1Gi', { storageClassName: 'nope' }), w: {}, want: ['event Warning ProvisioningFailed'] },
    // Bad input: a binding mode from a newer API (or an object that skipped validation) is not guessed at.
    { name: 'unknown volumeBindingMode: Warning, left Pending, nothing bound or provisioned', claim: claim('c', '1Gi', { storageClassName: 'odd' }), w: { classes: [sc('odd', { volumeBindingMode: 'Sometimes' })], volumes: [vol('v', '1Gi', { storageClassName: 'odd' })] }, want: ['event Warning UnknownVolumeBindingMode'] },
    { name: 'absurd request (1e30): FailedBinding, no volume taken', claim: claim('c', '1e30'), w: { volumes: [vol('v', '8Ei')] }, want: ['event Normal FailedBinding'] },
    { name: 'negative request (only from a forged or pre-validation object): nothing bound', claim: claim('c', '-1Gi'), w: { volumes: [vol('v', '1Gi')] }, want: ['event Normal FailedBinding'] },
    { name: 'kubernetes.io/no-provisioner: ProvisioningFailed, as upstream', claim: claim('c', '1Gi', { storageClassName: 'local' }), w: { classes: [sc('local', { provisioner: 'kubernetes.io/no-provisioner' })] }, want: ['event Warning ProvisioningFailed'] },
    { name: 'unset class gets the default class when no volume matches', claim: claim('c', '1Gi', { storageClassName: undefined }), w: { classes: [defaultClass] }, want: ['setClass d'] },
    { name: 'unset class binds a class-less volume before any default class is assigned', claim: claim('c', '1Gi', { storageClassName: undefined }), w: { classes: [defaultClass], volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: '"" class never gets the default class', claim: claim('c', '1Gi', { storageClassName: '' }), w: { classes: [defaultClass] }, want: ['event Normal FailedBinding'] },
    { name: 'Pending claim that still shows capacity: status cleared', claim: { ...claim('c', '1Gi'), status: { phase: 'Pending', capacity: { storage: '1Gi' } } }, w: {}, want: ['event Normal FailedBinding', 'claimPhase Pending'] },
    { name: 'WFFC without consumer: wait', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], volumes: [vol('v', '1Gi', { storageClassName: 'late' })] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'WFFC with an unscheduled pod: WaitForPodScheduled', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], pods: [pod('p', 'c')] }, want: ['event Normal WaitForPodScheduled'] },
    {
      name: 'WFFC with a generic ephemeral volume pod: WaitForPodScheduled',
      claim: claim('p-scratch', '1Gi', { storageClassName: 'late' }),
      w: { classes: [sc('late', WFFC)], pods: [{ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], volumes: [{ name: 'scratch', ephemeral: {} }] }, status: { phase: 'Pending' } }] },
      want: ['event Normal WaitForPodScheduled'],
    },
    { name: 'WFFC pre-bound by the scheduler: completed', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], volumes: [vol('v', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, phase: 'Bound' })] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'WFFC with selected-node: provisioning signal', claim: claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } }), w: { classes: [sc('late', WFFC)], nodes: [node('n1')], pods: [pod('p', 'c')] }, want: signal },
    ...selectedNodeCases(),
    ...nodeNameCases(),
    { name: 'named volume missing: wait', claim: claim('c', '1Gi', { volumeName: 'later' }), w: {}, want: [] },
    { name: 'named volume too small: VolumeMismatch', claim: claim('c', '5Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
    { name: 'named volume being deleted: VolumeMismatch', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi', { deleting: true })] }, want: ['event Warning VolumeMismatch'] },
    { name: 'named volume of another VolumeAttributesClass: VolumeMismatch', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi', { volumeAttributesClassName: 'gold' })] }, want: ['event Warning VolumeMismatch'] },
    { name: 'named volume, free and fitting: bound', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'named volume that names the claim back: bound without checks', claim: claim('c', '5Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } })] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'named volume of another claim: FailedBinding', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'x', uid: 'u' } })] }, want: ['event Warning FailedBinding'] },
    { name: 'bound claim whose volume is gone: Lost', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: {}, want: ['claimPhase Lost', 'event Warning ClaimLost'] },
    { name: 'Lost stays Lost without a second Event', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Lost' }), w: {}, want: [] },
    { name: 'bound claim, volume bound to another uid: Lost (misbound)', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'other' }, phase: 'Bound' })] }, want: ['claimPhase Lost', 'event Warning ClaimMisbound'] },
    { name: 'bound claim, consistent: nothing', claim: { ...claim('c', '1Gi', { volumeName: 'v', annotations: bound }), status: { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } }, w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, phase: 'Bound' })] }, want: [] },
    { name: 'bound claim with a capacity other than its volume: not rewritten', claim: { ...claim('c', '1Gi', { volumeName: 'v', annotations: bound }), status: { phase: 'Bound', capacity: { storage: '900Mi' }, accessModes: ['ReadWriteOnce'] } }, w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, phase: 'Bound' })] }, want: [] },
    { name: 'bound claim whose volume lost its claimRef: rebinds', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'Lost claim whose volume came back without a claimRef, still fitting: rebinds', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Lost' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'Lost claim whose volume came back too small: VolumeMismatch (Lost proves no earlier binding)', claim: claim('c', '5Gi', { volumeName: 'v', annotations: bound, phase: 'Lost' }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
    { name: 'bound claim whose volume lost its claimRef, claim expanded meanwhile (size may differ): rebinds', claim: claim('c', '5Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'bound claim whose volume lost its claimRef after an admin re-classed the volume: rebinds (it was Bound)', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi', { storageClassName: 'gold' })] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'bind-completed set by hand on a claim naming a free volume of another class: not bound, VolumeMismatch', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound }), w: { volumes: [vol('v', '1Gi', { storageClassName: 'gold' })] }, want: ['event Warning VolumeMismatch'] },
    { name: 'bind-completed set by hand, a free Block volume for a Filesystem claim: not bound', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound }), w: { volumes: [vol('v', '1Gi', { volumeMode: 'Block' })] }, want: ['event Warning VolumeMismatch'] },
    { name: 'bind-completed set by hand, a free volume too small for the claim: not bound', claim: claim('c', '5Gi', { volumeName: 'v', annotations: bound }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
    { name: 'bind-completed set by hand, a free volume that satisfies the claim: bound, as a claim naming it would be', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'claim being deleted: a free volume is not bound to it (it would be released, with Delete deleted, once the claim goes)', claim: { ...claim('c', '1Gi'), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete' })] }, want: [] },
    { name: 'claim being deleted, used by a pod already placed on a node (the kubelet starts it while pvc-protection holds the claim): the free volume is bound, as upstream', claim: { ...claim('c', '1Gi'), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete' })], pods: [pod('p', 'c', 'n1')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'claim being deleted, used only by a pod waiting for the scheduler (which refuses it): the free volume is held back', claim: { ...claim('c', '1Gi'), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete' })], pods: [pod('p', 'c')] }, want: [] },
    { name: 'claim being deleted, naming a free volume: not bound to it', claim: { ...claim('c', '1Gi', { volumeName: 'v' }), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete' })] }, want: [] },
    { name: 'claim being deleted, naming a free volume, used by a placed pod: bound as upstream', claim: { ...claim('c', '1Gi', { volumeName: 'v' }), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi')], pods: [pod('p', 'c', 'n1')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'claim being deleted: a volume pre-bound to it is bound, as upstream', claim: { ...claim('c', '1Gi'), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } })] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'claim being deleted, no volume fits: provisioning asked for as upstream', claim: { ...claim('c', '1Gi', { storageClassName: 'fast' }), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { classes: [sc('fast', { provisioner: 'ext.example.com' })] }, want: ['annotate volume.kubernetes.io/storage-provisioner,volume.beta.kubernetes.io/storage-provisioner', 'event Normal ExternalProvisioning'] },
    { name: 'bound claim being deleted whose volume lost its claimRef: bound again, not left for another claim', claim: { ...claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), metadata: { ...claim('c', '1Gi').metadata, annotations: bound, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'bound claim being deleted whose volume lost its claimRef, its bind-completed removed by hand: bound again, not written Pending', claim: { ...claim('c', '1Gi', { volumeName: 'v', phase: 'Bound' }), metadata: { ...claim('c', '1Gi').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'Bound claim whose volume lost its claimRef, its bind-completed removed by hand, expanded meanwhile: bound again, not VolumeMismatch and Pending (the volume would go free)', claim: claim('c', '5Gi', { volumeName: 'v', phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'Bound claim whose volume lost its claimRef, its bind-completed removed by hand, the volume re-classed by an admin: bound again', claim: claim('c', '1Gi', { volumeName: 'v', phase: 'Bound' }), w: { volumes: [vol('v', '1Gi', { storageClassName: 'gold' })] }, want: ['bindVolume v', 'bindClaim v'] },
    // A Bound claim names a volume that lost its claimRef (someone removed it; a re-binding stopped
    // after its phase write): the volume may hold that claim's data. Upstream's free pool offers it.
    { name: 'a free volume a Bound claim names (its data, maybe) is not taken by another claim', claim: claim('other', '1Gi'), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' })] }, want: ['event Normal FailedBinding'] },
    // Lost is written for a claim naming a volume that is missing or another's, which a tenant can make.
    { name: 'a Lost claim naming a free volume holds nothing back', claim: claim('other', '1Gi'), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', phase: 'Lost', annotations: bound })] }, want: ['bindVolume v', 'bindClaim v'] },
    // The annotation is anyone's who may write claims: a tenant would hold any free volume back with it.
    { name: 'a Pending claim marked bind-completed by hand, naming a free volume, holds nothing back', claim: claim('other', '1Gi'), w: { volumes: [vol('w', '1Gi')], claims: [claim('d', '1Gi', { volumeName: 'w', annotations: bound })] }, want: ['bindVolume w', 'bindClaim w'] },
    // Naming a volume is open to any namespace's claims: a held volume goes to none but its holder.
    { name: 'a claim naming a free volume a Bound claim names: not bound to it, a Warning', claim: claim('other', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' })] }, want: ['event Warning FailedBinding'] },
    { name: 'a claim marked bind-completed by hand, naming a free volume a Bound claim names: not bound to it, a Warning', claim: claim('other', '1Gi', { volumeName: 'v', annotations: bound }), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' })] }, want: ['event Warning FailedBinding'] },
    { name: 'two Bound claims name a free volume, one without bind-completed (removed by hand): it binds it again, not written Pending', claim: claim('c', '1Gi', { volumeName: 'v', phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', phase: 'Bound' }), claim('d', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' })] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'the Bound claim that names a free volume binds it again, itself in the index', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' })] }, want: ['bindVolume v', 'claimPhase Bound'] },
    { name: 'a Pending claim naming a volume (never bound to it) holds nothing back: the free volume is bound', claim: claim('other', '1Gi'), w: { volumes: [vol('v', '1Gi')], claims: [claim('c', '1Gi', { volumeName: 'v' })] }, want: ['bindVolume v', 'bindClaim v'] },
    // CSI migration (KEP-625): a migrated in-tree provisioner is asked for by its CSI driver's name.
    { name: 'class of a migrated in-tree provisioner: provisioning asked of its CSI driver', claim: claim('c', '1Gi', { storageClassName: 'gp2' }), w: { classes: [sc('gp2', { provisioner: 'kubernetes.io/aws-ebs' })] }, want: ['annotate volume.kubernetes.io/storage-provisioner,volume.beta.kubernetes.io/storage-provisioner', 'event Normal ExternalProvisioning'] },
    { name: 'claim annotated for a migrated in-tree provisioner gets migrated-to first', claim: claim('c', '1Gi', { storageClassName: 'gp2', annotations: { 'volume.kubernetes.io/storage-provisioner': 'kubernetes.io/aws-ebs' } }), w: { classes: [sc('gp2', { provisioner: 'kubernetes.io/aws-ebs' })] }, want: ['annotate pv.kubernetes.io/migrated-to'] },
    { name: 'claim with a stale migrated-to for a CSI provisioner: removed', claim: claim('c', '1Gi', { storageClassName: 'fast', annotations: { 'volume.kubernetes.io/storage-provisioner': 'example.com/csi', 'pv.kubernetes.io/migrated-to': 'x' } }), w: { classes: [sc('fast')] }, want: ['annotate  -pv.kubernetes.io/migrated-to'] },
  ];
  for (const c of cases) it(c.name, () => expect(summary(decideClaim(c.claim, world(c.w)))).to.deep.equal(c.want));
});

const withFinalizers = (v: ReturnType<typeof vol>, finalizers: string[]): ReturnType<typeof vol> => ({ ...v, metadata: { ...v.metadata, finalizers } });

describe('decideVolume', function () {
  const ref = { namespace: 'ns', name: 'c', uid: 'uid-c' };
  const provisioned = { 'pv.kubernetes.io/provisioned-by': 'example.com/csi' };
  const byController = { 'pv.kubernetes.io/bound-by-controller': 'yes' };
  const csi = { csi: { driver: 'example.com/csi', volumeHandle: 'h' } };
  const cases: { name: string; v: ReturnType<typeof vol>; w: WorldInput; want: string[] }[] = [
    { name: 'new volume becomes Available', v: vol('v', '1Gi', { phase: 'Pending' }), w: {}, want: ['volumePhase Available'] },
    // A re-binding stopped after its phase write, or a claimRef removed by hand: kept Bound for the
    // claim Bound to it (kube-scheduler pre-binds only Available volumes); Available with none.
    { name: 'Bound, no claimRef, a claim Bound to it names it: left Bound for that claim', v: vol('v', '1Gi', { phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { volumeName: 'v', annotations: { 'pv.kubernetes.io/bind-completed': 'yes' }, phase: 'Bound' })] }, want: [] },
    { name: 'Bound, no claimRef, only a Pending or Lost claim names it: Available, as upstream', v: vol('v', '1Gi', { phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { volumeName: 'v' }), claim('d', '1Gi', { volumeName: 'v', phase: 'Lost' })] }, want: ['volumePhase Available'] },
    { name: 'new volume whose node affinity matches no node: Available, with a Warning', v: vol('v', '1Gi', { phase: 'Pending', nodeAffinity: { required: { nodeSelectorTerms: [{}] } } }), w: {}, want: ['volumePhase Available', 'event Warning UnusableVolume'] },
    { name: 'new volume whose affinity needs an integer (Gt x): Available, with a Warning', v: vol('v', '1Gi', { phase: 'Pending', nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'Gt', values: ['x'] }] }] } } }), w: {}, want: ['volumePhase Available', 'event Warning UnusableVolume'] },
    { name: 'new volume with one usable term among bad ones: no Warning', v: vol('v', '1Gi', { phase: 'Pending', nodeAffinity: { required: { nodeSelectorTerms: [{}, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }] } } }), w: {}, want: ['volumePhase Available'] },
    { name: 'an Available volume is not warned about again on resync', v: vol('v', '1Gi', { nodeAffinity: { required: { nodeSelectorTerms: [{}] } } }), w: {}, want: [] },
    { name: 'pre-bound by name stays Available', v: vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c' }, phase: 'Pending' }), w: {}, want: ['volumePhase Available'] },
    // Upstream: Available in silence; no claim can ever take it.
    { name: 'pre-bound by name with no claim name: Available, with a Warning', v: vol('v', '1Gi', { claimRef: { namespace: 'ns' }, phase: 'Pending' }), w: {}, want: ['volumePhase Available', 'event Warning InvalidClaimRef'] },
    { name: 'pre-bound by name to a name no claim can have: Available, with a Warning', v: vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'Data' }, phase: 'Pending' }), w: {}, want: ['volumePhase Available', 'event Warning InvalidClaimRef'] },
    { name: 'pre-bound by name to a name no claim can have, Available already: not said again', v: vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'Data' } }), w: {}, want: [] },
    { name: 'bound to a claim that names it: Bound', v: vol('v', '1Gi', { claimRef: ref }), w: { claims: [claim('c', '1Gi', { volumeName: 'v' })] }, want: ['volumePhase Bound'] },
    { name: 'bound to a claim still Pending: left for the claim sync (not Bound yet)', v: vol('v', '1Gi', { claimRef: ref }), w: { claims: [claim('c', '1Gi')] }, want: [] },
    { name: 'bound to a claim of another volumeMode: VolumeMismatch on both', v: vol('v', '1Gi', { claimRef: ref, volumeMode: 'Block' }), w: { claims: [claim('c', '1Gi')] }, want: ['event Warning VolumeMismatch', 'event Warning VolumeMismatch'] },
    { name: 'claim gone, Retain: Released', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Retain' }), w: {}, want: ['volumePhase Released'] },
    { name: 'a claimRef with a uid and no namespace, Delete: never released, a Warning', v: vol('v', '1Gi', { claimRef: { name: 'c', uid: 'uid-c' }, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi }), w: {}, want: ['event Warning InvalidClaimRef'] },
    { name: 'a claimRef with a uid and no name: never released, a Warning', v: vol('v', '1Gi', { claimRef: { namespace: 'ns', uid: 'uid-c' }, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi }), w: {}, want: ['event Warning InvalidClaimRef'] },
    { name: 'a claimRef with a uid alone, new volume: no phase written, a Warning', v: vol('v', '1Gi', { claimRef: { uid: 'uid-c' }, phase: 'Pending' }), w: {}, want: ['event Warning InvalidClaimRef'] },
    // Names no claim can have: upstream's client-go refuses `/` and `%` before any request (never
    // released) but takes any other impossible name for a claim not found (released). Never here.
    ...['data%1', 'x/status', '..', 'Data', 'c_1', 'c'.repeat(254)].map((name) => ({
      name: `a claimRef naming ${JSON.stringify(name.slice(0, 12))}, which no claim can have, Delete: never released, a Warning`,
      v: vol('v', '1Gi', { claimRef: { namespace: 'ns', name, uid: 'uid-c' }, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi }),
      w: {},
      want: ['event Warning InvalidClaimRef'],
    })),
    ...['Bad_NS', 'a/b', 'n'.repeat(64)].map((namespace) => ({
      name: `a claimRef in namespace ${JSON.stringify(namespace.slice(0, 12))}, which no namespace can have, Delete: never released, a Warning`,
      v: vol('v', '1Gi', { claimRef: { namespace, name: 'c', uid: 'uid-c' }, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi }),
      w: {},
      want: ['event Warning InvalidClaimRef'],
    })),
    { name: 'claim gone while the volume is being deleted: Released all the same', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', deleting: true }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim re-created with a new uid: Released', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { uid: 'new' })] }, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, provisioned: Released, left to the deleter', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: provisioned }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, static CSI volume: Released, left to the CSI deleter', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, migrated volume: Released, left to CSI', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/migrated-to': 'pd.csi.storage.gke.io' } }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, no deleter: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete' }), w: {}, want: ['volumePhase Released', 'volumePhase Failed', 'event Warning VolumeFailedDelete'] },
    // provisionClaim hands a kubernetes.io/ name that was not migrated to an external provisioner of
    // that name, which deletes only Released volumes: Failed would leave the volume for ever.
    { name: 'claim gone, Delete, a kubernetes.io/ provisioner that was not migrated: left Released for the external provisioner provisionClaim handed it to', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/rbd' } }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, provisioned-by kubernetes.io/no-provisioner (nobody provisions under it): Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/no-provisioner' } }), w: {}, want: ['volumePhase Released', 'volumePhase Failed', 'event Warning VolumeFailedDelete'] },
    { name: 'claim gone, Recycle: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Released', persistentVolumeReclaimPolicy: 'Recycle' }), w: {}, want: ['volumePhase Failed', 'event Warning VolumeFailedRecycle'] },
    { name: 'claim gone, unknown policy: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Released', persistentVolumeReclaimPolicy: 'Shred' }), w: {}, want: ['volumePhase Failed', 'event Warning VolumeUnknownReclaimPolicy'] },
    { name: 'Failed is re-evaluated and stays Failed (no repeat Event)', v: vol('v', '1Gi', { claimRef: ref, phase: 'Failed', persistentVolumeReclaimPolicy: 'Recycle' }), w: {}, want: [] },
    { name: 'Failed, claim back with the same uid: Bound', v: vol('v', '1Gi', { claimRef: ref, phase: 'Failed' }), w: { claims: [claim('c', '1Gi', { volumeName: 'v' })] }, want: ['volumePhase Bound'] },
    { name: 'claim went elsewhere, we bound it: unbound', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', annotations: byController }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: ['unbindVolume'] },
    { name: 'claim went elsewhere, a user pre-bound it: uid cleared, stays pre-bound', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: ['unbindVolume (clear uid)'] },
    { name: 'claim went elsewhere, provisioned with Delete: Released to its deleter', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { ...provisioned, ...byController } }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: ['volumePhase Released'] },
    { name: 'claim went elsewhere, provisioned with Retain: unbound', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Retain', annotations: { ...provisioned, ...byController } }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: ['unbindVolume'] },
    { name: 'being deleted without a claim: synced like any other', v: vol('v', '1Gi', { deleting: true, phase: 'Pending' }), w: {}, want: ['volumePhase Available'] },
    { name: 'claim gone, Recycle, a pod still names the claim: Normal event, stays Released', v: vol('v', '1Gi', { claimRef: ref, phase: 'Released', persistentVolumeReclaimPolicy: 'Recycle' }), w: { pods: [pod('p', 'c', 'n1', 'Running')] }, want: ['event Normal VolumeFailedRecycle'] },
    {
      name: 'provisioned by a migrated in-tree plugin: migrated-to set and the in-tree finalizer removed, first',
      v: withFinalizers(vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/gce-pd' } }), ['kubernetes.io/pv-controller', 'kubernetes.io/pv-protection']),
      w: {},
      want: ['volumeMeta pv.kubernetes.io/migrated-to=pd.csi.storage.gke.io -finalizer kubernetes.io/pv-controller'],
    },
    { name: 'migrated volume, claim gone, Delete: Released and left to the CSI driver', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/aws-ebs', 'pv.kubernetes.io/migrated-to': 'ebs.csi.aws.com' } }), w: {}, want: ['volumePhase Released'] },
    { name: 'stale migrated-to on a CSI-provisioned volume: removed', v: vol('v', '1Gi', { annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/csi', 'pv.kubernetes.io/migrated-to': 'x' } }), w: {}, want: ['volumeMeta  -pv.kubernetes.io/migrated-to'] },
  ];
  for (const c of cases) it(c.name, () => expect(summary(decideVolume(c.v, world(c.w)))).to.deep.equal(c.want));
});

describe('releaseOf: exactly the volumes decideVolume releases (it starts the timing of a deletion)', function () {
  it('agrees with decideVolume for claims gone, present, re-created, and claimRefs no claim can have', function () {
    const csi = { csi: { driver: 'example.com/csi', volumeHandle: 'h' } };
    const refs = [
      { namespace: 'ns', name: 'c', uid: 'uid-c' },
      { namespace: 'ns', name: 'c', uid: 'old' },
      { namespace: 'ns', name: 'gone', uid: 'uid-g' },
      { namespace: 'ns', name: 'C', uid: 'uid-c' },
      { namespace: 'ns', name: 'c/status', uid: 'uid-c' },
      { namespace: 'Bad_NS', name: 'c', uid: 'uid-c' },
      { name: 'c', uid: 'uid-c' },
      { namespace: 'ns', uid: 'uid-c' },
    ];
    for (const claimRef of refs) {
      for (const claims of [[], [claim('c', '1Gi')]]) {
        const v = vol('v', '1Gi', { claimRef, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', ...csi });
        const w = world({ claims });
        const released = decideVolume(v, w).some((a) => a.kind === 'volumePhase' && a.phase === 'Released');
        expect(releaseOf(v, w), `${JSON.stringify(claimRef)} with ${claims.length} claim(s)`).to.equal(released);
      }
    }
  });
});

describe('provisioning and reclaim agree on who deletes', function () {
  it('a released Delete volume of a provisioner that provisionClaim hands claims to is never written Failed (its deleter acts only on Released)', function () {
    const ref = { namespace: 'ns', name: 'c', uid: 'uid-c' };
    for (const provisioner of ['example.com/csi', 'kubernetes.io/rbd', 'kubernetes.io/host-path', 'kubernetes.io/aws-ebs', 'kubernetes.io/no-provisioner']) {
      const handed = provisionClaim(claim('c', '1Gi'), 'x', sc('x', { provisioner })).find((a) => a.kind === 'annotateClaim');
      if (!handed || handed.kind !== 'annotateClaim') continue;
      const name = handed.set?.['volume.kubernetes.io/storage-provisioner'] ?? '';
      const released = vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': name } });
      const phases = decideVolume(released, world({})).flatMap((a) => (a.kind === 'volumePhase' ? [a.phase] : []));
      expect(phases, provisioner).to.deep.equal(['Released']);
    }
  });
});
