import { affinity, PROVISIONER } from './diff-scenario.js';
import { BETA_STORAGE_PROVISIONER, claimIs, PROVISIONED_BY, SELECTED_NODE, STORAGE_PROVISIONER, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';

const signalled = { [STORAGE_PROVISIONER]: PROVISIONER, [BETA_STORAGE_PROVISIONER]: PROVISIONER };
const HOSTNAME = 'kubernetes.io/hostname';

/** KEP-490 delayed binding (WaitForFirstConsumer), with and without the real kube-scheduler. */
export const delayedScenarios: Scenario[] = [
  {
    name: 'delayed binding without a pod: WaitForFirstConsumer, the free volume untouched',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      await s.pv('free', '1Gi', { class: late });
      await s.settle();
      await s.pvc('c', '1Gi', { class: late });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['WaitForFirstConsumer'] });
      volumeIs(st, 'free', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'delayed binding with a pod not yet scheduled: WaitForPodScheduled',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      await s.pvc('c', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c'], { unschedulable: true });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', events: ['WaitForFirstConsumer', 'WaitForPodScheduled'] }),
  },
  {
    name: 'delayed binding, the generic ephemeral volume of a pod not yet scheduled: WaitForPodScheduled',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      // The claim the ephemeral volume controller would create: <pod>-<volume>.
      await s.pvc('p-scratch', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', [], { unschedulable: true, ephemeral: { scratch: late } });
    },
    expect: (st) => claimIs(st, 'p-scratch', { phase: 'Pending', events: ['WaitForFirstConsumer', 'WaitForPodScheduled'] }),
  },
  {
    name: 'delayed binding with the scheduler: the pod goes to the node of the only fitting local volume, which is bound',
    // Whether a binder syncs the claim while its pod is still unscheduled (a few hundred ms) is a race
    // on either side: upstream looks at pods only at its next re-sync, Topovol on the pod's events.
    ignoreEvents: ['WaitForPodScheduled'],
    async run(s) {
      const local = await s.storageClass('local', { delayed: true, provisioner: 'kubernetes.io/no-provisioner' });
      await s.node('n1');
      const n2 = await s.node('n2');
      await s.pv('on-n2', '1Gi', { class: local, local: true, nodeAffinity: affinity(HOSTNAME, [n2]) });
      await s.settle();
      await s.pvc('c', '1Gi', { class: local });
      await s.settle();
      await s.pod('p', ['c']);
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'on-n2' });
      volumeIs(st, 'on-n2', { phase: 'Bound' });
      if (st.pods.p?.nodeName !== 'n2') throw new Error(`pod p on ${st.pods.p?.nodeName}, want n2`);
    },
  },
  {
    name: 'delayed binding with the scheduler and no volume: selected-node, provisioning, and the provisioned volume bound',
    // As above: a race between the scheduler and the binder's sync, on either side.
    ignoreEvents: ['WaitForPodScheduled'],
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1');
      await s.pvc('c', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c']);
      await s.until('the provisioning annotation', async () => (await s.claim('c')).metadata?.annotations?.[STORAGE_PROVISIONER] === PROVISIONER);
      // What the external provisioner creates for the selected node.
      await s.pv('pvc-c', '1Gi', { class: late, policy: 'Delete', claimRef: { claim: 'c', withUid: true }, annotations: { [PROVISIONED_BY]: PROVISIONER }, nodeAffinity: affinity(HOSTNAME, [n1]) });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'pvc-c' });
      if (st.claims.c?.annotations[SELECTED_NODE] !== 'n1') throw new Error('no selected node n1');
      if (st.pods.p?.nodeName !== 'n1') throw new Error(`pod p on ${st.pods.p?.nodeName}, want n1`);
    },
  },
  {
    name: 'delayed binding with a selected node and a free volume: the binder binds nothing and asks for provisioning',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', {}, false);
      await s.pv('free', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c'], { unschedulable: true });
      await s.pvc('c', '1Gi', { class: late, annotations: { [SELECTED_NODE]: n1 } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', annotations: { ...signalled, [SELECTED_NODE]: 'n1' }, events: ['ExternalProvisioning'] });
      volumeIs(st, 'free', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'delayed binding: a selected node that does not exist',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      await s.pod('p', ['c'], { unschedulable: true });
      await s.pvc('c', '1Gi', { class: late, annotations: { [SELECTED_NODE]: s.name('ghost') } });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: { ...signalled, [SELECTED_NODE]: 'ghost' }, events: ['ExternalProvisioning'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: signalled, events: ['ExternalProvisioning', 'SelectedNodeGone', 'WaitForPodScheduled'] }),
    },
  },
  {
    name: 'delayed binding: a selected node outside the class\'s allowedTopologies',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true, allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a'] }] }] });
      const n1 = await s.node('n1', { 'topology.kubernetes.io/zone': 'b' }, false);
      await s.pod('p', ['c'], { unschedulable: true });
      await s.pvc('c', '1Gi', { class: late, annotations: { [SELECTED_NODE]: n1 } });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: { ...signalled, [SELECTED_NODE]: 'n1' }, events: ['ExternalProvisioning'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: signalled, events: ['ExternalProvisioning', 'SelectedNodeNotAllowed', 'WaitForPodScheduled'] }),
    },
  },
  {
    name: 'delayed binding: a selected node no pod uses any more (kubernetes #112347)',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', {}, false);
      await s.pvc('c', '1Gi', { class: late, annotations: { [SELECTED_NODE]: n1 } });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: { ...signalled, [SELECTED_NODE]: 'n1' }, events: ['ExternalProvisioning'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: signalled, events: ['ExternalProvisioning', 'SelectedNodeStale', 'WaitForFirstConsumer'] }),
    },
  },
];

/** Pods placed with spec.nodeName, which no scheduler pre-binds or selects a node for (kubernetes #95767). */
export const nodeNameScenarios: Scenario[] = [
  {
    name: 'spec.nodeName: a pod placed on a node uses a delayed-binding claim (kubernetes #95767)',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', {}, false);
      await s.pvc('c', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c'], { nodeName: n1 });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: {}, events: ['WaitForFirstConsumer'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: { ...signalled, [SELECTED_NODE]: 'n1' }, events: ['ExternalProvisioning', 'ScheduledWithoutScheduler', 'WaitForFirstConsumer'] }),
    },
  },
  {
    name: 'spec.nodeName: a Succeeded pod does not pin the claim to its node',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', {}, false);
      await s.pod('done', ['c'], { nodeName: n1 });
      await s.podPhase('done', 'Succeeded');
      await s.settle();
      await s.pvc('c', '1Gi', { class: late });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['WaitForFirstConsumer'] }),
  },
  {
    name: 'spec.nodeName: a pod on a node outside the class\'s allowedTopologies',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true, allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['a'] }] }] });
      const n1 = await s.node('n1', { 'topology.kubernetes.io/zone': 'b' }, false);
      await s.pvc('c', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c'], { nodeName: n1 });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: {}, events: ['WaitForFirstConsumer'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: {}, events: ['NodeNotAllowedByStorageClass', 'WaitForFirstConsumer'] }),
    },
  },
  {
    name: 'spec.nodeName: a pod placed on a node the kubelet will refuse it on (its nodeSelector or required node affinity does not match the node, or it does not tolerate a `NoExecute` taint there)',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', { 'topology.kubernetes.io/zone': 'b' }, false);
      await s.pv('on-b', '1Gi', { class: late, nodeAffinity: affinity('topology.kubernetes.io/zone', ['b']) });
      await s.pvc('c', '1Gi', { class: late });
      await s.settle();
      await s.pod('p', ['c'], { nodeName: n1, nodeSelector: { 'topology.kubernetes.io/zone': 'a' } });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['WaitForFirstConsumer'] }),
      topovol: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['PlacedPodRefusedByNode', 'WaitForFirstConsumer'] }),
    },
  },
  {
    name: 'spec.nodeName: of two volumes pre-bound to the claim, the one the pod\'s node reaches',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', { 'topology.kubernetes.io/zone': 'a' }, false);
      await s.pv('a-far', '1Gi', { class: late, claimRef: { claim: 'c', withUid: false }, nodeAffinity: affinity('topology.kubernetes.io/zone', ['b']) });
      await s.pv('b-near', '1Gi', { class: late, claimRef: { claim: 'c', withUid: false }, nodeAffinity: affinity('topology.kubernetes.io/zone', ['a']) });
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      await s.pvc('c', '1Gi', { class: late });
    },
    divergence: {
      // Upstream does not look at the node: it binds whichever pre-bound volume it meets first.
      upstreamMayAgree: true,
      upstream: (st) => claimIs(st, 'c', { phase: 'Bound' }),
      topovol: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'b-near' }),
    },
  },
  {
    name: 'spec.nodeName: a single volume pre-bound to the claim that the pod\'s node cannot reach is bound all the same',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      const n1 = await s.node('n1', { 'topology.kubernetes.io/zone': 'a' }, false);
      await s.pv('far', '1Gi', { class: late, claimRef: { claim: 'c', withUid: false }, nodeAffinity: affinity('topology.kubernetes.io/zone', ['b']) });
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      await s.pvc('c', '1Gi', { class: late });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'far', annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' } }),
  },
  {
    name: 'spec.nodeName: a pod on a node, a class that does not provision, and a volume created on that node later',
    async run(s) {
      const local = await s.storageClass('local', { delayed: true, provisioner: 'kubernetes.io/no-provisioner' });
      const n1 = await s.node('n1', {}, false);
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      await s.pvc('c', '1Gi', { class: local });
      await s.settle();
      await s.pv('on-n1', '1Gi', { class: local, local: true, nodeAffinity: affinity(HOSTNAME, [n1]) });
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['WaitForFirstConsumer'] }),
      topovol: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'on-n1', annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' }, events: ['WaitForFirstConsumer'] }),
    },
  },
  {
    // pvc-protection keeps the claim while the pod exists, and the claim goes once the pod does: a
    // volume bound or a node selected for the pod now would be Released (with Delete, deleted) then.
    // Upstream never acts for a placed pod; Topovol waits too for a claim being deleted.
    name: 'spec.nodeName: a claim being deleted while the placed pod holds it gets no volume and no node when its node joins',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      await s.pvc('c', '1Gi', { class: late });
      await s.pod('p', ['c'], { nodeName: s.name('later') });
      await s.settle();
      await s.deleteClaim('c');
      await s.settle();
      await s.node('later', { 'topology.kubernetes.io/zone': 'a' }, false);
      await s.pv('on-a', '1Gi', { class: late, nodeAffinity: affinity('topology.kubernetes.io/zone', ['a']) });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', annotations: {}, terminating: true });
      volumeIs(st, 'on-a', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'spec.nodeName: a pod placed on a node that joins later',
    async run(s) {
      const late = await s.storageClass('late', { delayed: true });
      await s.pvc('c', '1Gi', { class: late });
      await s.pod('p', ['c'], { nodeName: s.name('later') });
      await s.settle();
      await s.node('later', {}, false);
    },
    divergence: {
      upstream: (st) => claimIs(st, 'c', { annotations: {}, events: ['WaitForFirstConsumer'] }),
      topovol: (st) => claimIs(st, 'c', { annotations: { ...signalled, [SELECTED_NODE]: 'later' }, events: ['ExternalProvisioning', 'ScheduledWithoutScheduler', 'WaitForFirstConsumer'] }),
    },
  },
];
