import { expect } from 'chai';
import type { BinderAction } from '../../src/binder/actions.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { claim, node, pod, sc, vol, world } from './world-fixture.js';

/** A compact, order-preserving summary of planned actions. */
function summary(actions: BinderAction[]): string[] {
  return actions.map((a) => {
    switch (a.kind) {
      case 'bindVolume':
      case 'bindClaim':
        return `${a.kind} ${a.volume.metadata?.name}`;
      case 'volumePhase':
      case 'claimPhase':
        return `${a.kind} ${a.phase}`;
      case 'annotateClaim':
        return `annotate ${Object.keys(a.set ?? {}).join(',')}${a.remove?.length ? ` -${a.remove.join(',')}` : ''}`;
      case 'setClaimClass':
        return `setClass ${a.storageClassName}`;
      case 'event':
        return `event ${a.type} ${a.reason}`;
      case 'unbindVolume':
        return 'unbindVolume';
      case 'requeueAfter':
        return `requeueAfter ${a.ms}`;
    }
  });
}

const WFFC = { volumeBindingMode: 'WaitForFirstConsumer' };
const SEL = 'volume.kubernetes.io/selected-node';
const PROV = 'volume.kubernetes.io/storage-provisioner,volume.beta.kubernetes.io/storage-provisioner';
const bound = { 'pv.kubernetes.io/bind-completed': 'yes' };

function staleCases(): { name: string; claim: ReturnType<typeof claim>; w: Parameters<typeof world>[0]; want: string[] }[] {
  const selected = claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } });
  const base = { classes: [sc('late', WFFC)], nodes: [node('n1'), node('n2')], now: 1_000_000, graceMs: 60_000 };
  const signal = [`annotate ${PROV}`, 'event Normal ExternalProvisioning'];
  const terminated = { ...pod('done', 'c', 'n1'), status: { phase: 'Succeeded' } };
  const deleting = { ...pod('going', 'c', 'n1'), metadata: { name: 'going', namespace: 'ns', deletionTimestamp: '2026-01-01T00:00:00Z' } };
  return [
    { name: 'stale selected-node: no pod, just noticed → wait out the grace', claim: selected, w: { ...base }, want: [...signal, 'requeueAfter 60000'] },
    { name: 'stale selected-node: no pod for 30s of 60s → wait the rest', claim: selected, w: { ...base, consumerlessSince: 970_000 }, want: [...signal, 'requeueAfter 30000'] },
    { name: 'stale selected-node: no pod for the grace → cleared', claim: selected, w: { ...base, consumerlessSince: 900_000 }, want: [`annotate  -${SEL}`, 'event Normal SelectedNodeStale'] },
    { name: 'stale selected-node: pod rescheduled to another node → cleared', claim: selected, w: { ...base, consumerlessSince: 900_000, pods: [pod('p2', 'c', 'n2')] }, want: [`annotate  -${SEL}`, 'event Normal SelectedNodeStale'] },
    { name: 'stale selected-node: only terminated or deleting pods count as none', claim: selected, w: { ...base, consumerlessSince: 900_000, pods: [terminated, deleting] }, want: [`annotate  -${SEL}`, 'event Normal SelectedNodeStale'] },
    { name: 'stale selected-node: provisioner active 10s ago → not cleared, look again when its grace ends', claim: selected, w: { ...base, consumerlessSince: 900_000, provisioningActivity: 990_000 }, want: [...signal, 'requeueAfter 50000'] },
    { name: 'stale selected-node: an unscheduled pod (the scheduler may be binding it) → kept', claim: selected, w: { ...base, consumerlessSince: 900_000, pods: [pod('p', 'c')] }, want: signal },
    { name: 'stale selected-node: a pod on the selected node → kept', claim: selected, w: { ...base, consumerlessSince: 900_000, pods: [pod('p', 'c', 'n1')] }, want: signal },
    { name: 'stale selected-node: a negative grace disables clearing', claim: selected, w: { ...base, consumerlessSince: 0, graceMs: -1 }, want: signal },
    {
      name: 'stale selected-node: a provisioned volume pre-bound to the claim is bound, not cleared',
      claim: selected,
      w: { ...base, consumerlessSince: 0, volumes: [vol('pv', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } })] },
      want: ['bindVolume pv', 'bindClaim pv'],
    },
  ];
}

describe('decideClaim', function () {
  const cases: { name: string; claim: ReturnType<typeof claim>; w: Parameters<typeof world>[0]; want: string[] }[] = [
    { name: 'binds the best volume', claim: claim('c', '1Gi'), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'class-less with no volume: FailedBinding', claim: claim('c', '1Gi'), w: {}, want: ['event Normal FailedBinding'] },
    { name: 'class with no volume: provisioning signal', claim: claim('c', '1Gi', { storageClassName: 'fast' }), w: { classes: [sc('fast')] }, want: [`annotate ${PROV}`, 'event Normal ExternalProvisioning'] },
    { name: 'already signalled: only the Event', claim: claim('c', '1Gi', { storageClassName: 'fast', annotations: { 'volume.kubernetes.io/storage-provisioner': 'example.com/csi', 'volume.beta.kubernetes.io/storage-provisioner': 'example.com/csi' } }), w: { classes: [sc('fast')] }, want: ['event Normal ExternalProvisioning'] },
    { name: 'selector does not stop the signal', claim: claim('c', '1Gi', { storageClassName: 'fast', selector: { matchLabels: { a: 'b' } } }), w: { classes: [sc('fast')] }, want: [`annotate ${PROV}`, 'event Normal ExternalProvisioning'] },
    { name: 'missing class object: ProvisioningFailed', claim: claim('c', '1Gi', { storageClassName: 'nope' }), w: {}, want: ['event Warning ProvisioningFailed'] },
    { name: 'nil class gets the default class', claim: claim('c', '1Gi', { storageClassName: undefined }), w: { classes: [sc('d', { metadata: { name: 'd', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } })] }, want: ['setClass d'] },
    { name: '"" class never gets the default class', claim: claim('c', '1Gi', { storageClassName: '' }), w: { classes: [sc('d', { metadata: { name: 'd', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } })] }, want: ['event Normal FailedBinding'] },
    { name: 'WFFC without consumer: wait', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], volumes: [vol('v', '1Gi', { storageClassName: 'late' })] }, want: ['event Normal WaitForFirstConsumer'] },
    { name: 'WFFC with an unscheduled pod: WaitForPodScheduled', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], pods: [pod('p', 'c')] }, want: ['event Normal WaitForPodScheduled'] },
    { name: 'WFFC pre-bound by the scheduler: completed', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], volumes: [vol('v', '1Gi', { storageClassName: 'late', claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, phase: 'Bound' })] }, want: ['bindVolume v', 'bindClaim v'] },
    { name: 'WFFC with selected-node: provisioning signal', claim: claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } }), w: { classes: [sc('late', WFFC)], nodes: [node('n1')], pods: [pod('p', 'c')] }, want: [`annotate ${PROV}`, 'event Normal ExternalProvisioning'] },
    // kubernetes #112347: a selected-node nobody will use any more is cleared, but only after the
    // grace period, and never while the external provisioner shows activity on the claim.
    ...staleCases(),
    { name: 'WFFC selected node gone: annotation removed', claim: claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'gone' } }), w: { classes: [sc('late', WFFC)] }, want: [`annotate  -${SEL}`, 'event Warning SelectedNodeGone'] },
    {
      name: 'WFFC selected node outside allowedTopologies: refused',
      claim: claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } }),
      w: { classes: [sc('late', { ...WFFC, allowedTopologies: [{ matchLabelExpressions: [{ key: 'zone', values: ['a'] }] }] })], nodes: [node('n1', { zone: 'b' })] },
      want: [`annotate  -${SEL}`, 'event Warning SelectedNodeNotAllowed'],
    },
    {
      name: 'WFFC pod with spec.nodeName: binds a volume reachable from that node',
      claim: claim('c', '1Gi', { storageClassName: 'late' }),
      w: {
        classes: [sc('late', WFFC)],
        nodes: [node('n1', { zone: 'a' })],
        pods: [pod('p', 'c', 'n1')],
        volumes: [
          vol('far', '1Gi', { storageClassName: 'late', nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }] } } }),
          vol('near', '2Gi', { storageClassName: 'late', nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] } } }),
        ],
      },
      want: ['bindVolume near', 'bindClaim near'],
    },
    { name: 'WFFC pod with spec.nodeName and no volume: selects its node', claim: claim('c', '1Gi', { storageClassName: 'late' }), w: { classes: [sc('late', WFFC)], nodes: [node('n1')], pods: [pod('p', 'c', 'n1')] }, want: [`annotate ${SEL}`, 'event Normal ScheduledWithoutScheduler'] },
    { name: 'named volume missing: wait', claim: claim('c', '1Gi', { volumeName: 'later' }), w: {}, want: [] },
    { name: 'named volume too small: VolumeMismatch', claim: claim('c', '5Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
    { name: 'named volume of another claim: FailedBinding', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'x', uid: 'u' } })] }, want: ['event Warning FailedBinding'] },
    { name: 'bound claim whose volume is gone: Lost', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: {}, want: ['claimPhase Lost', 'event Warning ClaimLost'] },
    { name: 'bound claim, volume bound to another uid: Lost (misbound)', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'other' }, phase: 'Bound' })] }, want: ['claimPhase Lost', 'event Warning ClaimMisbound'] },
    { name: 'bound claim, consistent: nothing', claim: { ...claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), status: { phase: 'Bound', capacity: { storage: '1Gi' } } }, w: { volumes: [vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' }, phase: 'Bound' })] }, want: [] },
    { name: 'bound claim whose volume lost its claimRef: rebinds', claim: claim('c', '1Gi', { volumeName: 'v', annotations: bound, phase: 'Bound' }), w: { volumes: [vol('v', '1Gi')] }, want: ['bindVolume v', 'bindClaim v'] },
  ];
  for (const c of cases) it(c.name, () => expect(summary(decideClaim(c.claim, world(c.w)))).to.deep.equal(c.want));
});

describe('decideVolume', function () {
  const ref = { namespace: 'ns', name: 'c', uid: 'uid-c' };
  const cases: { name: string; v: ReturnType<typeof vol>; w: Parameters<typeof world>[0]; want: string[] }[] = [
    { name: 'new volume becomes Available', v: vol('v', '1Gi', { phase: 'Pending' }), w: {}, want: ['volumePhase Available'] },
    { name: 'pre-bound by name stays Available', v: vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c' }, phase: 'Pending' }), w: {}, want: ['volumePhase Available'] },
    { name: 'bound to an existing claim becomes Bound', v: vol('v', '1Gi', { claimRef: ref }), w: { claims: [claim('c', '1Gi', { volumeName: 'v' })] }, want: ['volumePhase Bound'] },
    { name: 'claim gone, Retain: Released', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Retain' }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim recreated with a new uid: Released', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { uid: 'new' })] }, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, provisioned: Released, left to the deleter', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'x' } }), w: {}, want: ['volumePhase Released'] },
    { name: 'claim gone, Delete, not provisioned: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', persistentVolumeReclaimPolicy: 'Delete' }), w: {}, want: ['volumePhase Released', 'volumePhase Failed', 'event Warning VolumeFailedDelete'] },
    { name: 'claim gone, Recycle: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Released', persistentVolumeReclaimPolicy: 'Recycle' }), w: {}, want: ['volumePhase Failed', 'event Warning VolumeFailedRecycle'] },
    { name: 'claim gone, unknown policy: Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Released', persistentVolumeReclaimPolicy: 'Shred' }), w: {}, want: ['volumePhase Failed', 'event Warning VolumeUnknownReclaimPolicy'] },
    { name: 'Failed stays Failed', v: vol('v', '1Gi', { claimRef: ref, phase: 'Failed', persistentVolumeReclaimPolicy: 'Recycle' }), w: {}, want: [] },
    { name: 'claim went elsewhere, we bound it: unbind', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound', annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: ['unbindVolume'] },
    { name: 'claim went elsewhere, user bound it: left alone', v: vol('v', '1Gi', { claimRef: ref, phase: 'Bound' }), w: { claims: [claim('c', '1Gi', { volumeName: 'other' })] }, want: [] },
    { name: 'being deleted: nothing', v: vol('v', '1Gi', { claimRef: ref, deleting: true }), w: {}, want: [] },
  ];
  for (const c of cases) it(c.name, () => expect(summary(decideVolume(c.v, world(c.w)))).to.deep.equal(c.want));
});
