import { expect } from 'chai';
import type { Event, Node, PersistentVolume, Pod } from '@topovol/shared';
import type { BinderAction } from '../../src/binder/actions.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { kubeletRefusesPlacedPod } from '../../src/binder/placed-pod-admission.js';
import { ProvisioningActivity } from '../../src/binder/provisioning-activity.js';
import { reclaim } from '../../src/binder/reclaim-volume.js';
import { releaseRefuted, verifyOnServer } from '../../src/binder/verify-on-server.js';
import type { KubeClient } from '@topovol/shared';
import { decided, ref } from './decision-summary.js';
import type { DecisionCase } from './decision-summary.js';
import { claim, node, pod, sc, vol, world } from './world-fixture.js';

// Edges of the binder's decisions that a mutation run found no unit test held (each case below
// fails with the guard it names removed or inverted): the ones that can lose data or bind the
// wrong volume first, then those that leave a claim stuck or write what upstream does not.

const WFFC = { volumeBindingMode: 'WaitForFirstConsumer' } as const;
const SEL = 'volume.kubernetes.io/selected-node';
const BIND_COMPLETED = { 'pv.kubernetes.io/bind-completed': 'yes' };
const zoneA = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] } };
const taintedNode = (name: string, labels: Record<string, string>, taints: NonNullable<NonNullable<Node['spec']>['taints']>): Node => ({ metadata: { name, labels }, spec: { taints } });
const withPod = (p: Pod, spec: Partial<NonNullable<Pod['spec']>> = {}, meta: Partial<NonNullable<Pod['metadata']>> = {}, status?: Pod['status']): Pod => ({
  ...p,
  metadata: { ...p.metadata, ...meta },
  spec: { ...p.spec!, ...spec },
  ...(status ? { status } : {}),
});


const cases: DecisionCase[] = [
  // Mis-binds.
  {
    name: 'a claim naming a volume pre-bound by name to another claim of its namespace does not take it (FailedBinding)',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v' }),
    w: { volumes: [vol('v', '1Gi', { claimRef: ref('x') })] },
    want: ['event Warning FailedBinding'],
  },
  {
    name: 'a claim naming a volume that lacks one of its access modes (RWX on RWO) is not bound to it (VolumeMismatch)',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', accessModes: ['ReadWriteMany'] }),
    w: { volumes: [vol('v', '1Gi')] },
    want: ['event Warning VolumeMismatch'],
  },
  {
    name: 'a claim naming a volume that has some of its access modes but not all is not bound to it (VolumeMismatch)',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', accessModes: ['ReadWriteOnce', 'ReadWriteMany'] }),
    w: { volumes: [vol('v', '1Gi')] },
    want: ['event Warning VolumeMismatch'],
  },
  {
    name: 'a placed pod tolerating another NoExecute taint with Equal does not get a volume on a node whose NoExecute taint it does not tolerate',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'late' }),
    w: {
      classes: [sc('late', WFFC)],
      nodes: [taintedNode('n1', { zone: 'a' }, [{ key: 'dedicated', value: 'x', effect: 'NoExecute' }])],
      pods: [withPod(pod('p', 'c', 'n1'), { tolerations: [{ key: 'other', operator: 'Equal', value: 'y', effect: 'NoExecute' }] })],
      volumes: [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })],
    },
    want: ['event Warning PlacedPodRefusedByNode'],
  },
  {
    name: 'a placed pod being deleted, its containers still running, is no consumer: no volume is pinned to its node',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'late' }),
    w: {
      classes: [sc('late', WFFC)],
      nodes: [node('n1', { zone: 'a' })],
      pods: [withPod(pod('p', 'c', 'n1', 'Running'), {}, { uid: 'uid-p', deletionTimestamp: '2026-01-01T00:00:00Z' }, { phase: 'Running', containerStatuses: [{ name: 'x', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } }] })],
      volumes: [vol('near', '1Gi', { storageClassName: 'late', nodeAffinity: zoneA })],
    },
    want: ['event Normal WaitForFirstConsumer'],
  },
  {
    name: "a Bound claim whose volume's claimRef has its uid but another namespace: the claimRef is repaired, the volume not released",
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', annotations: BIND_COMPLETED, phase: 'Bound' }),
    w: { volumes: [vol('v', '1Gi', { phase: 'Bound', claimRef: ref('c', { namespace: 'elsewhere', uid: 'uid-c' }) })] },
    want: ['bindVolume v', 'claimPhase Bound'],
  },
  // Stuck claims and status.
  {
    name: 'bind-completed but not Bound (a crash between the two writes), its own volume being deleted: finished as Bound, not VolumeMismatch',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', annotations: BIND_COMPLETED, phase: 'Pending' }),
    w: { volumes: [vol('v', '1Gi', { deleting: true, phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }) })] },
    want: ['claimPhase Bound'],
  },
  {
    name: 'a stale selected node with --stale-selected-node-grace=0 is removed at once',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } }),
    w: { classes: [sc('late', WFFC)], nodes: [], graceMs: 0 },
    want: ['note gone', `annotate  -${SEL} (confirm gone)`, 'event Warning SelectedNodeGone'],
  },
  {
    name: 'an Immediate claim with a selected node whose node is gone: no selected-node removal (only delayed binding has one)',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'fast', annotations: { [SEL]: 'n1' } }),
    w: { classes: [sc('fast')], nodes: [], noted: { issue: 'gone', node: 'n1', since: 0 } },
    want: ['annotate volume.kubernetes.io/storage-provisioner,volume.beta.kubernetes.io/storage-provisioner', 'event Normal ExternalProvisioning'],
  },
  {
    name: 'a controller-bound claim whose volume went to another claim gets FailedBinding only, no Pending written over Bound',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' }, phase: 'Bound' }),
    w: { volumes: [vol('v', '1Gi', { claimRef: ref('x', { uid: 'u' }) })] },
    want: ['event Warning FailedBinding'],
  },
  {
    name: 'a claim naming a volume not there yet, with a stale Bound status: reset to Pending',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'later', phase: 'Bound' }),
    w: {},
    want: ['claimPhase Pending'],
  },
  {
    name: 'Recycle, its claim gone, only a Succeeded pod naming it: Failed (VolumeFailedRecycle), the finished pod is no user',
    decide: 'volume',
    volume: vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Recycle', phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }) }),
    w: { pods: [pod('done', 'c', 'n1', 'Succeeded')] },
    want: ['volumePhase Released', 'volumePhase Failed', 'event Warning VolumeFailedRecycle'],
  },
];

describe('binder decisions: edges a mutation run found untested', function () {
  for (const c of cases) {
    it(c.name, function () {
      expect(decided(c)).to.deep.equal(c.want);
    });
  }

  // bound-by-controller says the binder chose the pairing; upstream writes it only then.
  for (const [name, theClaim] of [
    ['an unbound claim', claim('c', '1Gi')],
    ['a claim naming the volume', claim('c', '1Gi', { volumeName: 'v' })],
  ] as const) {
    it(`${name} taking a volume the user pre-bound to it does not mark the volume bound-by-controller`, function () {
      const actions = decideClaim(theClaim, world({ volumes: [vol('v', '1Gi', { claimRef: ref('c') })] }));
      const bind = actions.find((a): a is Extract<BinderAction, { kind: 'bindVolume' }> => a.kind === 'bindVolume');
      expect(bind?.volume.metadata?.name).to.equal('v');
      expect(bind?.boundByController).to.equal(false);
    });
  }

  it('a migrated Recycle volume is left to its CSI driver: nothing to reclaim here', function () {
    const v = vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Recycle', annotations: { 'pv.kubernetes.io/migrated-to': 'x.csi' }, phase: 'Released', claimRef: ref('c', { uid: 'uid-c' }) });
    expect(reclaim(v, world({}), true)).to.deep.equal([]);
  });

  it('a placed pod the kubelet already admitted (an init container ran) is not refused when its node changes later', function () {
    const p = withPod(pod('p', 'c', 'n1'), { nodeSelector: { zone: 'b' } }, {}, { phase: 'Pending', initContainerStatuses: [{ name: 'i', image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} } }] });
    expect(kubeletRefusesPlacedPod(p, node('n1', { zone: 'a' }))).to.equal(undefined);
  });

  it('the server check refuses Released for a provisioned Delete volume whose claim the server has, not yet bound to any volume', function () {
    const v: PersistentVolume = { metadata: { name: 'v1', annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.test' } }, spec: { persistentVolumeReclaimPolicy: 'Delete', claimRef: ref('c', { uid: 'uid-c' }) } };
    expect(releaseRefuted(v, { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c' }, spec: {} })).to.match(/still exists/);
  });

  it('the server check is asked for a guarded action that is not the plan\'s first (an Event before it)', async function () {
    const c = claim('c', '1Gi', { annotations: { [SEL]: 'n1' } });
    const client = { get: () => Promise.resolve({ metadata: { name: 'n1' } }), list: () => Promise.resolve({ items: [] }) } as unknown as KubeClient;
    const plan: BinderAction[] = [
      { kind: 'event', target: c, type: 'Warning', reason: 'SelectorTooLargeToCache', message: 'x' },
      { kind: 'annotateClaim', claim: c, remove: [SEL], confirm: { issue: 'gone', node: 'n1', quietSince: 0 } },
    ];
    expect((await verifyOnServer(client, plan))?.index).to.equal(1);
  });

  it("a claim's remembered provisioner activity never goes back when an older Event is delivered again", function () {
    const a = new ProvisioningActivity();
    const ev = (name: string, rv: string, t: number): Event => ({ metadata: { name, namespace: 'ns', uid: name, resourceVersion: rv }, involvedObject: { namespace: 'ns', name: 'c', uid: 'uid-c' }, reason: 'Provisioning', lastTimestamp: new Date(t).toISOString() });
    a.observe(ev('e1', '1', 100_000), 100_000);
    a.observe(ev('e2', '2', 200_000), 200_000);
    a.observe(ev('e1', '1', 100_000), 300_000);
    expect(a.rememberedFor(claim('c', '1Gi'))).to.equal(200_000);
  });
});
