import { expect } from 'chai';
import type { Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from '@topovol/shared';
import { decideMark } from '../../src/rollback/decide-mark.js';
import { decideRollback } from '../../src/rollback/decide-rollback.js';
import type { RollbackWorld } from '../../src/rollback/rollback-world.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const SEL = 'volume.kubernetes.io/selected-node';

interface W {
  pvs?: PersistentVolume[];
  claims?: PersistentVolumeClaim[];
  pods?: Pod[];
  nodes?: Node[];
  inUse?: Record<string, string[]>;
  attachments?: VolumeAttachment[];
  failures?: Record<string, Event[]>;
  stuckSince?: number;
}

function world(w: W): RollbackWorld {
  return {
    volume: (n) => w.pvs?.find((v) => v.metadata?.name === n),
    claim: (ns, n) => w.claims?.find((c) => c.metadata?.namespace === ns && c.metadata?.name === n),
    node: (n) => w.nodes?.find((x) => x.metadata?.name === n),
    podsUsingClaim: (ns, n) => (w.pods ?? []).filter((p) => p.metadata?.namespace === ns && p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === n)),
    nodesUsingVolume: (v) => Object.entries(w.inUse ?? {}).flatMap(([node, names]) => (names.includes(v.metadata?.name ?? '') ? [node] : [])),
    attachmentsOf: (n) => (w.attachments ?? []).filter((a) => a.spec?.source?.persistentVolumeName === n),
    provisioningFailures: (c) => w.failures?.[c.metadata?.name ?? ''] ?? [],
    now: () => NOW,
    graceMs: 60_000,
    stuckSince: () => w.stuckSince ?? NOW - 120_000,
    markWindowMs: 600_000,
  };
}

const claim = (name: string, extra: { volume?: string; selected?: string } = {}): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '5', annotations: extra.selected ? { [SEL]: extra.selected } : {} },
  spec: { volumeName: extra.volume },
  status: { phase: extra.volume ? 'Bound' : 'Pending' },
});
const pv = (name: string, claimName: string, extra: { usage?: string; forNode?: string; forPod?: string; provisioned?: boolean; ageMs?: number } = {}): PersistentVolume => ({
  metadata: {
    name,
    creationTimestamp: new Date(NOW - (extra.ageMs ?? 1000)).toISOString(),
    labels: extra.usage ? { 'rollback.topovol.io/usage': extra.usage } : {},
    annotations: {
      ...(extra.provisioned === false ? {} : { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' }),
      ...(extra.forNode ? { 'rollback.topovol.io/provisioned-for-node': extra.forNode, 'rollback.topovol.io/provisioned-for-pod': extra.forPod ?? 'uid-p' } : {}),
    },
  },
  spec: { claimRef: { namespace: 'ns', name: claimName, uid: `uid-${claimName}` } },
  status: { phase: 'Bound' },
});
const pod = (name: string, claims: string[], extra: { nodeName?: string; phase?: string; uid?: string; tolerations?: NonNullable<Pod['spec']>['tolerations'] } = {}): Pod => ({
  metadata: { name, namespace: 'ns', uid: extra.uid ?? `uid-${name}` },
  spec: { nodeName: extra.nodeName, tolerations: extra.tolerations, containers: [], volumes: claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })) },
  status: { phase: extra.phase ?? 'Pending' },
});
const node = (name: string, spec: Node['spec'] = {}): Node => ({ metadata: { name }, spec });
const failed = (msg: string): Event => ({ metadata: { name: 'e' }, involvedObject: {}, reason: 'ProvisioningFailed', message: msg });

// Seed 004: the marks.
describe('decideMark', function () {
  const cases: { name: string; v: PersistentVolume; w: W; want: string }[] = [
    { name: 'fresh provisioned volume of a waiting pod → unused', v: pv('v', 'c'), w: { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'])] }, want: 'markUnused a' },
    { name: 'not dynamically provisioned → untouched', v: pv('v', 'c', { provisioned: false }), w: { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'])] }, want: 'none' },
    { name: 'older than the mark window → untouched (not seen provisioned)', v: pv('v', 'c', { ageMs: 3_600_000 }), w: { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'])] }, want: 'none' },
    { name: 'no selected-node → untouched', v: pv('v', 'c'), w: { claims: [claim('c', { volume: 'v' })], pods: [pod('p', ['c'])] }, want: 'none' },
    { name: 'a pod of the claim is bound to a node → untouched', v: pv('v', 'c'), w: { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c'], { nodeName: 'a' })] }, want: 'none' },
    { name: 'two pods share the claim → untouched', v: pv('v', 'c'), w: { claims: [claim('c', { volume: 'v', selected: 'a' })], pods: [pod('p', ['c']), pod('q', ['c'])] }, want: 'none' },
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
});

// Seed 004 "Detection" and the justification rules of issue #6.
describe('decideRollback', function () {
  const unusedOnA = pv('v1', 'c1', { usage: 'unused', forNode: 'a' });
  const base: W = { pvs: [unusedOnA], claims: [claim('c1', { volume: 'v1' }), claim('c2')], nodes: [node('a'), node('b')], failures: { c2: [failed('rpc error: code = ResourceExhausted')] } };
  const P = pod('p', ['c1', 'c2']);
  const cases: { name: string; p?: Pod; w: W; want: string }[] = [
    { name: 'sibling failed and lost its selected node → rollback', w: base, want: 'rollback' },
    { name: 'within the grace period → wait', w: { ...base, stuckSince: NOW - 10_000 }, want: 'wait' },
    { name: 'no evidence the pod cannot run on a → none', w: { ...base, failures: {} }, want: 'none' },
    { name: 'node a deleted → rollback', w: { ...base, failures: {}, nodes: [node('b')] }, want: 'rollback' },
    { name: 'node a cordoned → rollback', w: { ...base, failures: {}, nodes: [node('a', { unschedulable: true })] }, want: 'rollback' },
    { name: 'node a tainted, not tolerated → rollback', w: { ...base, failures: {}, nodes: [node('a', { taints: [{ key: 'k', effect: 'NoSchedule' }] })] }, want: 'rollback' },
    { name: 'node a tainted, tolerated → none', p: pod('p', ['c1', 'c2'], { tolerations: [{ key: 'k', operator: 'Exists' }] }), w: { ...base, failures: {}, nodes: [node('a', { taints: [{ key: 'k', effect: 'NoSchedule' }] })] }, want: 'none' },
    { name: 'node a cordoned while a sibling still provisions there → rollback (the node rules a out anyway)', w: { ...base, claims: [claim('c1', { volume: 'v1' }), claim('c2', { selected: 'a' })], failures: {}, nodes: [node('a', { unschedulable: true })] }, want: 'rollback' },
    { name: 'pod bound to a node → none', p: pod('p', ['c1', 'c2'], { nodeName: 'a' }), w: base, want: 'none' },
    { name: 'pod has run → refuse', p: pod('p', ['c1', 'c2'], { phase: 'Running' }), w: base, want: 'refuse' },
    { name: 'volume provisioned for another pod → refuse', w: { ...base, pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a', forPod: 'uid-other' })] }, want: 'refuse' },
    { name: 'another pod references the claim → refuse', w: { ...base, pods: [pod('q', ['c1'])] }, want: 'refuse' },
    { name: 'volume marked used → refuse', w: { ...base, pvs: [pv('v1', 'c1', { usage: 'used', forNode: 'a' })] }, want: 'refuse' },
    { name: 'evidence of use seen now → refuse', w: { ...base, inUse: { b: ['v1'] } }, want: 'refuse' },
    { name: 'volume without our marks → none', w: { ...base, pvs: [pv('v1', 'c1')] }, want: 'none' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const w = world({ ...c.w, pods: [c.p ?? P, ...(c.w.pods ?? [])] });
      expect(decideRollback(c.p ?? P, w).kind).to.equal(c.want);
    });
  }
});
