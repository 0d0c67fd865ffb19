import { expect } from 'chai';
import type { PersistentVolume, Pod } from '@topovol/shared';
import { decideMark } from '../../src/rollback/decide-mark.js';
import { decideRollback, NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import { CLASSES, IMMEDIATE, NOW, claim, failed, node, pod, pv, record, seen, seriesFailed, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';


// The marks: unused only with the evidence that the volume was provisioned for the pod waiting for it.
describe('decideMark', function () {
  const fresh = { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'])], observed: { 'uid-c': seen() } };
  const cases: { name: string; v: PersistentVolume; w: W; want: string }[] = [
    { name: 'provisioned for the waiting pod, seen provisioning, pod older than the volume → unused', v: pv('v', 'c'), w: fresh, want: 'markUnused a' },
    { name: 'provisioning not seen by this process → used (when in doubt, never roll back)', v: pv('v', 'c'), w: { ...fresh, observed: {} }, want: 'markUsed' },
    { name: 'not seen yet, and the cached claim is not bound yet (its watch lags) → undecided', v: pv('v', 'c'), w: { ...fresh, claims: [claim('c', { selected: 'a' })], observed: {} }, want: 'none' },
    { name: 'not seen yet, claim not bound in the cache, but the volume is in use → used', v: pv('v', 'c'), w: { ...fresh, claims: [claim('c', { selected: 'a' })], observed: {}, inUse: { a: ['v'] } }, want: 'markUsed' },
    { name: 'seen provisioning for another pod (a replacement came since) → used', v: pv('v', 'c'), w: { ...fresh, pods: [pod('p2', ['c'])] }, want: 'markUsed' },
    { name: 'the waiting pod was created after the volume → used', v: pv('v', 'c', { ageMs: 1000 }), w: { ...fresh, pods: [pod('p', ['c'], { createdMsAgo: 500 })] }, want: 'markUsed' },
    { name: 'seen provisioning for another node → used', v: pv('v', 'c'), w: { ...fresh, observed: { 'uid-c': seen('uid-p', 'b') } }, want: 'markUsed' },
    { name: 'a pod of the claim is already scheduled → used', v: pv('v', 'c'), w: { ...fresh, pods: [pod('p', ['c'], { nodeName: 'a' })] }, want: 'markUsed' },
    { name: 'two pods share the claim → used', v: pv('v', 'c'), w: { ...fresh, pods: [pod('p', ['c']), pod('q', ['c'])] }, want: 'markUsed' },
    { name: 'not dynamically provisioned → untouched', v: pv('v', 'c', { provisioned: false }), w: fresh, want: 'none' },
    { name: 'older than the mark window → untouched', v: pv('v', 'c', { ageMs: 3_600_000 }), w: fresh, want: 'none' },
    { name: 'no selected-node → untouched', v: pv('v', 'c'), w: { ...fresh, claims: [claim('c', { volume: 'v' })] }, want: 'none' },
    { name: 'provisioned from a snapshot (the claim\'s dataSource) → used: it holds data from the start', v: pv('v', 'c'), w: { ...fresh, claims: [{ ...claim('c', { volume: 'v', selected: 'a' }), spec: { volumeName: 'v', dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 's' } } }] }, want: 'markUsed' },
    { name: 'unused, watched since provisioned, no evidence → stays unused', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], pods: [pod('p', ['c'])], observed: { 'uid-c': seen() } }, want: 'none' },
    { name: 'unused, but this process did not watch its claim\'s pods since it was provisioned (a restart) → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], pods: [pod('p', ['c'])] }, want: 'markUsed' },
    { name: 'unused and a pod of its claim is scheduled (a driver without attach reports nothing else) → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], pods: [pod('p', ['c'], { nodeName: 'a' })], observed: { 'uid-c': seen() } }, want: 'markUsed' },
    { name: 'unused and a pod of its claim was seen deleted after it was scheduled → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], observed: { 'uid-c': seen() }, ended: { 'ns/c': 'pod ns/p using claim c was scheduled to node a, and was deleted' } }, want: 'markUsed' },
    { name: 'unused, its claim pre-populated from another claim (a clone) → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [{ ...claim('c', { volume: 'v' }), spec: { volumeName: 'v', dataSourceRef: { kind: 'PersistentVolumeClaim', name: 'src' } } }], observed: { 'uid-c': seen() } }, want: 'markUsed' },
    { name: 'unused and its pod runs → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], pods: [pod('p', ['c'], { phase: 'Running' })] }, want: 'markUsed' },
    { name: 'unused and a node has it in use → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], inUse: { a: ['v'] } }, want: 'markUsed' },
    { name: 'unused and a VolumeAttachment exists → used', v: pv('v', 'c', { usage: 'unused', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })], attachments: [{ metadata: { name: 'va' }, spec: { attacher: 'x', nodeName: 'a', source: { persistentVolumeName: 'v' } } }] }, want: 'markUsed' },
    { name: 'used stays used', v: pv('v', 'c', { usage: 'used', forNode: 'a' }), w: { claims: [claim('c', { volume: 'v' })] }, want: 'none' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const d = decideMark(c.v, world(c.w));
      expect(d.kind === 'markUnused' ? `markUnused ${d.node}` : d.kind).to.equal(c.want);
    });
  }

  it('asks for the costly evidence (every node\'s volumesInUse) only for volumes that may be marked', function () {
    const costly = (w: W) => ({
      ...world(w),
      nodesUsingVolume: (): string[] => {
        throw new Error('evidence asked for');
      },
    });
    for (const v of [pv('v', 'c', { provisioned: false }), pv('v', 'c', { ageMs: 3_600_000 }), pv('v', 'c', { usage: 'used', forNode: 'a' })]) expect(decideMark(v, costly(fresh)).kind).to.equal('none');
    expect(decideMark(pv('v', 'c'), { ...costly(fresh), claim: () => undefined }).kind).to.equal('none');
  });
});

/** The pod `p` with one pinned claim, as the scheduler left it: PodScheduled=False, Unschedulable, with this message. */
function unschedulable(message: string): Pod {
  const p = pod('p', ['c1']);
  return { ...p, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastTransitionTime: new Date(NOW - 1_000).toISOString() }] } };
}

// Detection, justification, evidence, pacing (kubernetes #94217).
describe('decideRollback', function () {
  const unusedOnA = pv('v1', 'c1', { usage: 'unused', forNode: 'a' });
  // This process watched c1 (and the ephemeral claim below) from its provisioning on.
  const base: W = { pvs: [unusedOnA], claims: [claim('c1', { volume: 'v1' }), claim('c2')], nodes: [node('a'), node('b')], failures: { c2: [failed('rpc error: code = ResourceExhausted')] }, observed: { 'uid-c1': seen(), 'uid-p-scratch': seen() } };
  const P = pod('p', ['c1', 'c2']);
  const cases: { name: string; p?: Pod; w: W; want: string }[] = [
    { name: 'sibling failed and lost its selected node: every claim decided → rollback at once', w: base, want: 'rollback' },
    // Only a claim that can have had a selected node (a WaitForFirstConsumer class) is rescheduled by
    // its provisioner: an Immediate class's failure says nothing about node a.
    { name: 'a sibling of an Immediate class failed (it never had a selected node) → none', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { storageClass: IMMEDIATE })], failures: { c2: [failed('rpc error: code = InvalidArgument desc = bad parameter')] } }, want: 'none' },
    { name: 'a sibling of an Immediate class failed, and node a is cordoned → rollback on the node\'s state', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { storageClass: IMMEDIATE })], nodes: [node('a', { unschedulable: true }), node('b')], readySince: NOW - NODE_STATE_DWELL_MS }, want: 'rollback' },
    { name: 'a sibling whose class is not in the cache (deleted, or not seen yet) failed → none', w: { ...base, classes: CLASSES.filter((c) => c.volumeBindingMode !== 'WaitForFirstConsumer') }, want: 'none' },
    { name: 'a class-less sibling failed → none', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { storageClass: '' })] }, want: 'none' },
    { name: 'a sibling of a WaitForFirstConsumer class named by the beta annotation failed and lost its selected node → rollback', w: { ...base, claims: [claim('c1', { volume: 'v1' }), { ...claim('c2', { storageClass: IMMEDIATE }), metadata: { ...claim('c2').metadata, annotations: { 'volume.beta.kubernetes.io/storage-class': CLASSES[0]!.metadata!.name! } } }] }, want: 'rollback' },
    { name: 'node a cordoned while a sibling is undecided (still provisioning) → wait the grace', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], failures: {}, nodes: [node('a', { unschedulable: true })] }, want: 'wait' },
    // A claim keeps an earlier attempt's failures (another node's, an earlier pod's); the scheduler may
    // select node a for it again, and that provisioning is under way (SelectionVersions).
    { name: 'a sibling selected for a, its ResourceExhausted recorded on a copy from before that selection → none', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'a' })], failedBeforeSelected: base.failures!['c2'] }, want: 'none' },
    { name: 'a sibling selected for a, its ResourceExhausted recorded since → rollback at once', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'a' })] }, want: 'rollback' },
    { name: 'node a cordoned, a sibling selected again with only an earlier attempt\'s failure (still provisioning) → wait the grace', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], failedBeforeSelected: base.failures!['c2'], nodes: [node('a', { unschedulable: true })], readySince: NOW - NODE_STATE_DWELL_MS }, want: 'wait' },
    { name: 'node a cordoned, a sibling that failed since its selection (decided) → rollback', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], nodes: [node('a', { unschedulable: true })], readySince: NOW - NODE_STATE_DWELL_MS }, want: 'rollback' },
    { name: 'a sibling that lost its selected node: its failures count however they arrived → rollback', w: { ...base, failedBeforeSelected: base.failures!['c2'] }, want: 'rollback' },
    { name: 'node a cordoned, a sibling undecided past the grace → rollback', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], failures: {}, nodes: [node('a', { unschedulable: true })], stuckSince: NOW - 120_000, readySince: NOW - NODE_STATE_DWELL_MS }, want: 'rollback' },
    { name: 'no evidence the pod cannot run on a → none', w: { ...base, failures: {} }, want: 'none' },
    { name: 'node a deleted (only claim pinned) → rollback', p: pod('p', ['c1']), w: { ...base, failures: {}, nodes: [node('b')], readySince: NOW - NODE_STATE_DWELL_MS }, want: 'rollback' },
    { name: 'node a tainted, tolerated → none', p: pod('p', ['c1', 'c2'], { tolerations: [{ key: 'k', operator: 'Exists' }] }), w: { ...base, failures: {}, nodes: [node('a', { taints: [{ key: 'k', effect: 'NoSchedule' }] })] }, want: 'none' },
    { name: 'pod bound to a node → none', p: pod('p', ['c1', 'c2'], { nodeName: 'a' }), w: base, want: 'none' },
    { name: 'pod has run → refuse', p: pod('p', ['c1', 'c2'], { phase: 'Running' }), w: base, want: 'refuse' },
    { name: 'volume provisioned for another pod → refuse', w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-other' })] }, want: 'refuse' },
    { name: 'another pod references the claim → refuse', w: { ...base, pods: [pod('q', ['c1'])] }, want: 'refuse' },
    { name: 'volume marked used → refuse', w: { ...base, pvs: [pv('v1', 'c1', { usage: 'used', forNode: 'a' })] }, want: 'refuse' },
    { name: 'evidence of use seen now → refuse', w: { ...base, inUse: { b: ['v1'] } }, want: 'refuse' },
    { name: 'volume without our marks → none', w: { ...base, pvs: [pv('v1', 'c1')] }, want: 'none' },
    { name: 'this process did not watch the volume\'s claim since it was provisioned (it restarted since) → refuse', w: { ...base, observed: {} }, want: 'refuse' },
    { name: 'the claim was pre-populated from a snapshot → refuse', w: { ...base, claims: [{ ...claim('c1', { volume: 'v1' }), spec: { volumeName: 'v1', dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 's' } } }, claim('c2')] }, want: 'refuse' },
    // Replaced pods: the same workload, once the pod it was provisioned for is gone.
    { name: 'a replacement pod of the same workload, the original gone → rollback', p: pod('p2', ['c1', 'c2'], { owner: 'rs-uid' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'rs-uid' })] }, want: 'rollback' },
    { name: 'a replacement pod, the original seen deleted after it was scheduled (it may have written) → refuse', p: pod('p2', ['c1', 'c2'], { owner: 'rs-uid' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'rs-uid' })], ended: { 'ns/c1': 'pod ns/p using claim c1 was scheduled to node a, and was deleted' } }, want: 'refuse' },
    { name: 'a replacement pod while the original still exists → refuse', p: pod('p2', ['c1', 'c2'], { owner: 'rs-uid' }), w: { ...base, pods: [pod('p', [], { owner: 'rs-uid' })], pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'rs-uid' })] }, want: 'refuse' },
    { name: 'a pod of another workload → refuse', p: pod('p2', ['c1', 'c2'], { owner: 'other-rs' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'rs-uid' })] }, want: 'refuse' },
    // The scheduler's own report: the pinned volume's node cannot take the pod, the others are excluded by the volume.
    { name: 'scheduler: "Insufficient memory", others "didn\'t match PersistentVolume\'s node affinity" (kube-scheduler v1.37) → rollback', p: unschedulable("0/2 nodes are available: 1 Insufficient memory, 1 node(s) didn't match PersistentVolume's node affinity."), w: { ...base, failures: {} }, want: 'rollback' },
    { name: 'scheduler: "had volume node affinity conflict" (before kubernetes #129887) → rollback', p: unschedulable('0/2 nodes are available: 1 Insufficient memory, 1 node(s) had volume node affinity conflict.'), w: { ...base, failures: {} }, want: 'rollback' },
    { name: 'scheduler: unschedulable for reasons that do not involve the volume → none', p: unschedulable('0/2 nodes are available: 2 Insufficient memory.'), w: { ...base, failures: {} }, want: 'none' },
    // Generic ephemeral volumes are the pod's claims too.
    { name: 'an ephemeral volume\'s claim pinned, sibling failed → rollback', p: pod('p', ['c2'], { ephemeral: ['scratch'] }), w: { ...base, pvs: [pv('v1', 'p-scratch', { usage: 'unused', forNode: 'a' })], claims: [claim('p-scratch', { volume: 'v1' }), claim('c2')] }, want: 'rollback' },
    // Pacing: a cap, a backoff, and only evidence newer than the last rollback.
    { name: 'a failure older than the last rollback → none', w: { ...base, failures: { c2: [failed('ResourceExhausted', NOW - 600_000)] }, rollbacks: [record('uid-p', 1, NOW - 300_000)] }, want: 'none' },
    // An events.k8s.io/v1 recorder writes the first occurrence as eventTime and keeps its message for
    // the whole series; its repeats come late. A series from before the last rollback is not new.
    { name: 'an events.k8s.io failure first seen before the last rollback, its series going on since → none', w: { ...base, failures: { c2: [seriesFailed('ResourceExhausted', NOW - 600_000, NOW - 60_000)] }, rollbacks: [record('uid-p', 1, NOW - 300_000)] }, want: 'none' },
    { name: 'an events.k8s.io failure first seen after the last rollback (a new series) → rollback (attempt 2)', w: { ...base, failures: { c2: [seriesFailed('ResourceExhausted', NOW - 60_000)] }, rollbacks: [record('uid-p', 1, NOW - 300_000)] }, want: 'rollback 2' },
    { name: 'a new failure after the last rollback, within its backoff → wait', w: { ...base, rollbacks: [record('uid-p', 1, NOW - 10_000)] }, want: 'wait' },
    { name: 'a new failure after the last rollback, backoff over → rollback (attempt 2)', w: { ...base, rollbacks: [record('uid-p', 1, NOW - 60_000)] }, want: 'rollback 2' },
    { name: 'attempt 1 expired from the history, 2 and 3 kept, backoff over → rollback (attempt 4, not a second 3)', w: { ...base, rollbacks: [record('uid-p', 3, NOW - 60_000), record('uid-p', 2, NOW - 3_600_000)] }, want: 'rollback 4' },
    { name: 'the workload had 3 rollbacks → limit', w: { ...base, rollbacks: [record('uid-p', 3, NOW - 3_600_000), record('uid-p', 2, NOW - 7_200_000), record('uid-p', 1, NOW - 9_000_000)] }, want: 'limit' },
    // Histories are per namespace (owner references are namespace-local) and per StatefulSet replica.
    { name: '3 rollbacks recorded for the same owner uid in another namespace → rollback (attempt 1)', p: pod('p', ['c1', 'c2'], { owner: 'rs-uid' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'rs-uid' })], rollbacks: [1, 2, 3].map((n) => record('rs-uid', n, NOW - n * 3_600_000, { namespace: 'other', kind: 'ReplicaSet' })) }, want: 'rollback 1' },
    { name: 'a StatefulSet: 3 rollbacks of replica web-1 do not limit web-0 → rollback (attempt 1)', p: pod('web-0', ['c1', 'c2'], { uid: 'uid-p', owner: 'sts-uid', ownerKind: 'StatefulSet' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'sts-uid' })], rollbacks: [1, 2, 3].map((n) => record('sts-uid', n, NOW - n * 3_600_000, { pod: 'web-1', kind: 'StatefulSet' })) }, want: 'rollback 1' },
    { name: 'a StatefulSet: 3 rollbacks of this replica → limit', p: pod('web-0', ['c1', 'c2'], { uid: 'uid-p', owner: 'sts-uid', ownerKind: 'StatefulSet' }), w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: 'sts-uid' })], rollbacks: [1, 2, 3].map((n) => record('sts-uid', n, NOW - n * 3_600_000, { pod: 'web-0', kind: 'StatefulSet' })) }, want: 'limit' },
  ];
  // A sibling bound to a volume the loop does not roll back (static, or provisioned before it
  // watched) that allows only node a: undoing c1 would not move the pod off a.
  const labelled = (name: string, zone: string, spec: NonNullable<Parameters<typeof node>[1]> = {}) => ({ ...node(name, spec), metadata: { name, labels: { 'kubernetes.io/hostname': name, zone } } });
  const staticOn = (values: string[], key = 'kubernetes.io/hostname'): PersistentVolume => ({
    metadata: { name: 'static' },
    spec: { claimRef: { namespace: 'ns', name: 'c3', uid: 'uid-c3' }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values }] }] } } },
  });
  // A bound sibling provisions nothing: decided, no grace (stuckSince left unset).
  const heldBy = (v: PersistentVolume, nodes = [labelled('a', 'z1'), labelled('b', 'z1')]): W => ({ ...base, pvs: [unusedOnA, v], claims: [...base.claims!, claim('c3', { volume: 'static' })], nodes });
  const P3 = pod('p', ['c1', 'c2', 'c3']);
  cases.push(
    { name: 'a sibling bound to an unmarked volume that allows only node a → refuse (a rollback would not move the pod)', p: P3, w: heldBy(staticOn(['a'])), want: 'refuse' },
    { name: 'the same, node a gone → refuse (the volume still allows no other node)', p: P3, w: { ...heldBy(staticOn(['a']), [labelled('b', 'z1')]), readySince: NOW - NODE_STATE_DWELL_MS }, want: 'refuse' },
    { name: 'a sibling bound to an unmarked volume of the zone (nodes a and b) → rollback', p: P3, w: heldBy(staticOn(['z1'], 'zone')), want: 'rollback' },
    { name: 'a sibling bound to an unmarked volume of node b only → rollback (the pod can go where it is)', p: P3, w: heldBy(staticOn(['b'])), want: 'rollback' },
    // Nodes the pod cannot be placed on now are no place to go: the rollback waits until one is (a node's change queues the pod).
    { name: 'a sibling bound to an unmarked volume of node b only, b cordoned → refuse', p: P3, w: heldBy(staticOn(['b']), [labelled('a', 'z1'), labelled('b', 'z1', { unschedulable: true })]), want: 'refuse' },
    { name: 'the same, b tainted NoExecute against the pod → refuse', p: P3, w: heldBy(staticOn(['b']), [labelled('a', 'z1'), labelled('b', 'z1', { taints: [{ key: 'drain', effect: 'NoExecute' }] })]), want: 'refuse' },
    { name: 'the same, b tainted NoSchedule, a taint the pod tolerates → rollback', p: pod('p', ['c1', 'c2', 'c3'], { tolerations: [{ key: 'drain', operator: 'Exists' }] }), w: heldBy(staticOn(['b']), [labelled('a', 'z1'), labelled('b', 'z1', { taints: [{ key: 'drain', effect: 'NoSchedule' }] })]), want: 'rollback' },
    { name: 'the same, b tainted PreferNoSchedule only → rollback', p: P3, w: heldBy(staticOn(['b']), [labelled('a', 'z1'), labelled('b', 'z1', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] })]), want: 'rollback' },
    { name: 'a sibling bound to an unmarked volume of the zone, b cordoned and c placeable → rollback', p: P3, w: heldBy(staticOn(['z1'], 'zone'), [labelled('a', 'z1'), labelled('b', 'z1', { unschedulable: true }), labelled('c', 'z1')]), want: 'rollback' },
    { name: 'a sibling bound to an unmarked volume of the zone, b outside the pod\'s nodeSelector → refuse', p: { ...P3, spec: { ...P3.spec!, nodeSelector: { zone: 'z1', disk: 'ssd' } } }, w: heldBy(staticOn(['z1'], 'zone')), want: 'refuse' },
    { name: 'the same, b outside the pod\'s required node affinity → refuse', p: { ...P3, spec: { ...P3.spec!, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['b'] }] }] } } } } }, w: heldBy(staticOn(['z1'], 'zone')), want: 'refuse' },
    { name: 'the same, b inside the pod\'s nodeSelector → rollback', p: { ...P3, spec: { ...P3.spec!, nodeSelector: { zone: 'z1' } } }, w: heldBy(staticOn(['z1'], 'zone')), want: 'rollback' },
    { name: 'a sibling bound to an unmarked volume without node affinity → rollback', p: P3, w: heldBy({ metadata: { name: 'static' }, spec: { claimRef: { namespace: 'ns', name: 'c3', uid: 'uid-c3' } } }), want: 'rollback' },
    // Still being bound (the claim names the volume, the volume not yet the claim, or not cached yet): undecided, the grace applies.
    { name: 'a sibling naming a volume that does not name it back yet → wait the grace', p: P3, w: heldBy({ metadata: { name: 'static' }, spec: {} }), want: 'wait' },
    { name: 'a sibling naming a volume bound to an earlier claim of its name (another uid) → wait the grace', p: P3, w: heldBy({ metadata: { name: 'static' }, spec: { claimRef: { namespace: 'ns', name: 'c3', uid: 'uid-c3-before' } } }), want: 'wait' },
    { name: 'a sibling naming a volume not cached yet → wait the grace', p: P3, w: { ...base, claims: [...base.claims!, claim('c3', { volume: 'static' })] }, want: 'wait' },
    { name: 'a sibling naming a volume that does not name it back, past the grace → rollback', p: P3, w: { ...heldBy({ metadata: { name: 'static' }, spec: {} }), stuckSince: NOW - 120_000 }, want: 'rollback' },
  );
  for (const c of cases) {
    it(c.name, function () {
      const w = world({ ...c.w, pods: [c.p ?? P, ...(c.w.pods ?? [])] });
      const d = decideRollback(c.p ?? P, w, c.w.stuckSince, c.w.readySince);
      expect(d.kind === 'rollback' && c.want.startsWith('rollback ') ? `rollback ${d.attempt}` : d.kind).to.equal(c.want);
    });
  }

  it('notes when it first saw the pod stuck and undecided, and waits from then', function () {
    const w: W = { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'b' })], failures: {}, nodes: [node('a', { unschedulable: true })] };
    const d = decideRollback(P, world({ ...w, pods: [P] }), undefined);
    expect(d).to.deep.include({ kind: 'wait', ms: 60_000, firstSeen: NOW });
  });

  // kube-scheduler's PreBind waits for the claims to be bound, then binds the pod to the node it
  // chose, cordoned since or not: a node's state alone counts only once the pod has been seen ready
  // to roll back for NODE_STATE_DWELL_MS. A failed attempt reported (a provisioner's failure, the
  // scheduler's condition) needs no such wait.
  describe("a node's state alone: the dwell", function () {
    const only: W = { ...base, failures: {}, nodes: [node('b')] };
    const P1 = pod('p', ['c1']);
    const decide = (w: W, p: Pod = P1) => decideRollback(p, world({ ...w, pods: [p] }), w.stuckSince, w.readySince);
    it('first seen ready (node gone, every claim decided): waits the dwell, and says since when', function () {
      expect(decide(only)).to.deep.include({ kind: 'wait', ms: NODE_STATE_DWELL_MS, dwelling: true, readyFirstSeen: NOW });
    });
    it('seen ready 5 s ago: waits the rest, noting nothing new', function () {
      const d = decide({ ...only, readySince: NOW - 5_000 });
      expect(d).to.deep.include({ kind: 'wait', ms: NODE_STATE_DWELL_MS - 5_000, dwelling: true });
      expect(d).to.not.have.property('readyFirstSeen', NOW);
    });
    it('seen ready for the dwell: rollback', function () {
      expect(decide({ ...only, readySince: NOW - NODE_STATE_DWELL_MS }).kind).to.equal('rollback');
    });
    it('--rollback-node-state-wait sets the dwell', function () {
      expect(decideRollback(P1, { ...world({ ...only, pods: [P1] }), nodeStateDwellMs: 1_000 }, undefined)).to.deep.include({ kind: 'wait', ms: 1_000, dwelling: true });
      expect(decideRollback(P1, { ...world({ ...only, pods: [P1] }), nodeStateDwellMs: 1_000 }, undefined, NOW - 1_000).kind).to.equal('rollback');
    });
    it('a cordoned node and a tainted one alike', function () {
      expect(decide({ ...base, failures: {}, nodes: [node('a', { unschedulable: true })] }).kind).to.equal('wait');
    });
    it('a provisioner failure on the node (ResourceExhausted): rollback at once, no dwell', function () {
      expect(decide(base, P).kind).to.equal('rollback');
    });
    it('a refusal is said at once, not after the dwell', function () {
      expect(decide({ ...only, pvs: [pv('v1', 'c1', { usage: 'used', forNode: 'a' })] }).kind).to.equal('refuse');
    });
  });

  // The workload comes from the pod's owner references, which whoever may update the pod rewrites: a
  // new owner must not start an empty history. The claims keep their names through a rollback.
  describe('history: the claims pinned carry it across a change of owner', function () {
    const ofClaim = (owner: string, n: number, at: number, claimName = 'c1', namespace = 'ns') => {
      const r = record(owner, n, at, { kind: 'ReplicaSet', namespace });
      return { ...r, spec: { ...r.spec, claims: [{ name: claimName, uid: `old-${n}`, resourceVersion: '1', volume: `v-old-${n}`, template: { metadata: {}, spec: {} } }] } };
    };
    const owned = (owner: string) => pod('p', ['c1', 'c2'], { owner });
    const atA = (p: Pod) => ({ ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-p', forWorkload: p.metadata!.ownerReferences![0]!.uid })] });
    const decide = (p: Pod, w: W) => decideRollback(p, world({ ...w, pods: [p] }), undefined, NOW - NODE_STATE_DWELL_MS);
    it("3 rollbacks of c1 under owner A, the pod now naming owner B: limit", function () {
      const p = owned('rs-B');
      expect(decide(p, { ...atA(p), rollbacks: [1, 2, 3].map((n) => ofClaim('rs-A', n, NOW - n * 3_600_000)) }).kind).to.equal('limit');
    });
    it("a rollback of c1 under owner A 10 s ago: owner B backs off all the same", function () {
      const p = owned('rs-B');
      expect(decide(p, { ...atA(p), rollbacks: [ofClaim('rs-A', 1, NOW - 10_000)] }).kind).to.equal('wait');
    });
    it("rollbacks of another claim, or of c1 in another namespace, do not count", function () {
      const p = owned('rs-B');
      const d = decide(p, { ...atA(p), rollbacks: [...[1, 2, 3].map((n) => ofClaim('rs-A', n, NOW - n * 3_600_000, 'other')), ...[1, 2, 3].map((n) => ofClaim('rs-A', n + 3, NOW - n * 3_600_000, 'c1', 'elsewhere'))] });
      expect(d.kind === 'rollback' ? `rollback ${d.attempt}` : d.kind).to.equal('rollback 1');
    });
  });

  it('a pod naming a claim twice (kube-apiserver admits it) pins it once, so its record has each claim once', function () {
    const twice = pod('p', ['c1', 'c2', 'c1']);
    const d = decideRollback(twice, world({ ...base, pods: [twice] }), undefined);
    expect(d.kind === 'rollback' ? d.pinned.map((p) => p.claim.metadata?.name) : d.kind).to.deep.equal(['c1']);
  });

  it('records the newest evidence it rests on, so a later rollback needs newer evidence', function () {
    const d = decideRollback(P, world({ ...base, failures: { c2: [failed('ResourceExhausted', NOW - 7_000), failed('ResourceExhausted', NOW - 3_000)] }, pods: [P] }), undefined);
    expect(d.kind === 'rollback' ? d.evidenceTime : undefined).to.equal(NOW - 3_000);
  });
});
