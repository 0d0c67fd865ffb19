import { expect } from 'chai';
import type { Node, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { groupsForClaim } from '../../src/binder/access-modes.js';
import { findBestVolume, findMatchingVolume, isPreBoundTo } from '../../src/binder/find-matching-volume.js';
import type { MatchOptions, VolumeCandidates } from '../../src/binder/find-matching-volume.js';
import { VolumeIndex } from '../../src/binder/volume-index.js';
import { decided, ref } from './decision-summary.js';
import type { DecisionCase } from './decision-summary.js';
import { claim, node, vol } from './world-fixture.js';

// Edges of volume matching that a mutation run found no unit test held: each case fails with the
// comparison, guard or tie-break it names changed. Parity cases cite upstream's
// FindMatchingVolume (k8s.io/component-helpers/storage/volume/pv_helpers.go) and its access-mode
// index (pkg/controller/volume/persistentvolume/index.go).

const zone = (z: string): NonNullable<PersistentVolume['spec']>['nodeAffinity'] => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: [z] }] }] },
});
const RWO_ROX = ['ReadWriteOnce', 'ReadOnlyMany'];
const RWO_RWX = ['ReadWriteOnce', 'ReadWriteMany'];

/** The binder's production path: a VolumeIndex fed with these objects, read as VolumeCandidates. */
function indexed(volumes: PersistentVolume[], nodes: Node[] = []): VolumeCandidates {
  const index = new VolumeIndex();
  const byName = new Map(volumes.map((v) => [v.metadata?.name ?? '', v]));
  for (const n of nodes) index.upsertNode(n);
  for (const v of volumes) index.upsertVolume(v);
  return {
    preBoundVolumes: (ns, name) => index.preBoundTo(ns, name).map((n) => byName.get(n)!),
    accessModeGroups: (cls) => index.accessModeGroups(cls),
    freeVolumes: (cls, group, minBytes, nodeName) =>
      [...(nodeName === undefined ? index.freeVolumes(cls, group, minBytes) : index.freeVolumesForNode(cls, group, nodeName, minBytes))].map((n) => byName.get(n)!),
  };
}

interface MatchCase {
  name: string;
  claim: PersistentVolumeClaim;
  volumes: PersistentVolume[];
  opts?: MatchOptions;
  want: string | undefined;
}

const cases: MatchCase[] = [
  // IsVolumeBoundToClaim compares namespace and name: a claimRef naming a claim of the same name in
  // another namespace is someone else's pre-binding, never this claim's.
  {
    name: 'a volume pre-bound to a claim of the same name in another namespace is not this claim\'s',
    claim: claim('c', '1Gi'),
    volumes: [vol('theirs', '1Gi', { claimRef: ref('c', { namespace: 'elsewhere' }) }), vol('free', '2Gi')],
    want: 'free',
  },
  // Sizes that are not positive only come from objects written before validation: such a claim
  // matches nothing rather than every volume.
  { name: 'a claim of zero bytes matches nothing', claim: claim('c', '0'), volumes: [vol('a', '1Gi')], want: undefined },
  // A phase written as "" is no phase yet: the volume is new, and free.
  { name: 'a volume whose phase is "" is free', claim: claim('c', '1Gi'), volumes: [{ ...vol('blank', '1Gi'), status: { phase: '' } }, vol('ok', '2Gi')], want: 'blank' },
  // Within a class and access-mode group the index yields the smallest first, whether or not a
  // volume has node affinity: a smaller volume without affinity beats a larger one with it.
  { name: 'the smallest of node-affine and unconstrained volumes alike (no node)', claim: claim('c', '1Gi'), volumes: [vol('affine', '2Gi', { nodeAffinity: zone('a') }), vol('plain', '1Gi')], want: 'plain' },
  { name: 'the smallest of node-affine and unconstrained volumes alike (no node), the other way round', claim: claim('c', '1Gi'), volumes: [vol('affine', '1Gi', { nodeAffinity: zone('a') }), vol('plain', '2Gi')], want: 'affine' },
  {
    name: 'the smallest of node-affine and unconstrained volumes alike (for a node)',
    claim: claim('c', '1Gi'),
    volumes: [vol('affine', '2Gi', { nodeAffinity: zone('a') }), vol('plain', '1Gi'), vol('affine-small', '1500Mi', { nodeAffinity: zone('a') })],
    opts: { delayBinding: true, node: node('n', { zone: 'a' }) },
    want: 'plain',
  },
  {
    name: 'equal sizes, one node-affine: the first by name',
    claim: claim('c', '1Gi'),
    volumes: [vol('b-plain', '1Gi'), vol('a-affine', '1Gi', { nodeAffinity: zone('a') })],
    opts: { delayBinding: true, node: node('n', { zone: 'a' }) },
    want: 'a-affine',
  },
  // Groups of as many modes are searched by key (upstream walks a map, in no fixed order), so the
  // answer never depends on the order volumes were seen in.
  { name: 'two groups of two modes: RWO,ROX before RWO,RWX, whatever the sizes', claim: claim('c', '1Gi'), volumes: [vol('rwx', '1Gi', { accessModes: RWO_RWX }), vol('rox', '5Gi', { accessModes: RWO_ROX })], want: 'rox' },
  { name: 'two groups of two modes, seen the other way round: the same answer', claim: claim('c', '1Gi'), volumes: [vol('rox', '5Gi', { accessModes: RWO_ROX }), vol('rwx', '1Gi', { accessModes: RWO_RWX })], want: 'rox' },
];

describe('volume matching: edges a mutation run found untested', function () {
  for (const c of cases) {
    it(c.name, function () {
      const opts = c.opts ?? { delayBinding: false };
      expect(findMatchingVolume(c.claim, c.volumes, opts)?.metadata?.name, 'findMatchingVolume').to.equal(c.want);
      expect(findBestVolume(c.claim, indexed(c.volumes, opts.node ? [opts.node] : []), opts)?.metadata?.name, 'findBestVolume over VolumeIndex').to.equal(c.want);
    });
  }

  it('isPreBoundTo: namespace and name must both be the claim\'s; the uid too when the claimRef has one', function () {
    const c = claim('c', '1Gi');
    const table: [string, PersistentVolume, boolean][] = [
      ['same namespace and name, no uid', vol('v', '1Gi', { claimRef: ref('c') }), true],
      ['same namespace and name and uid', vol('v', '1Gi', { claimRef: ref('c', { uid: 'uid-c' }) }), true],
      ['another uid', vol('v', '1Gi', { claimRef: ref('c', { uid: 'uid-old' }) }), false],
      ['another namespace', vol('v', '1Gi', { claimRef: ref('c', { namespace: 'elsewhere' }) }), false],
      ['another namespace, the same uid', vol('v', '1Gi', { claimRef: ref('c', { namespace: 'elsewhere', uid: 'uid-c' }) }), false],
      ['another name', vol('v', '1Gi', { claimRef: ref('d') }), false],
    ];
    for (const [what, v, want] of table) expect(isPreBoundTo(v, c), what).to.equal(want);
  });

  it('groupsForClaim: fewest modes first, then by key, whatever order the groups come in', function () {
    const groups = ['RWO,RWX', 'RWO,ROX,RWX', 'RWO,ROX', 'RWO', 'RWX', 'ROX,RWX'];
    const want = ['RWO', 'RWO,ROX', 'RWO,RWX', 'RWO,ROX,RWX'];
    expect(groupsForClaim(groups, ['ReadWriteOnce'])).to.deep.equal(want);
    expect(groupsForClaim([...groups].reverse(), ['ReadWriteOnce'])).to.deep.equal(want);
  });
});

// checkVolumeSatisfyClaim (pv_controller.go) for a claim that names its volume.
const named: DecisionCase[] = [
  {
    name: 'a claim naming a volume pre-bound to a claim of its name in another namespace does not take it (FailedBinding)',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v' }),
    w: { volumes: [vol('v', '1Gi', { claimRef: ref('c', { namespace: 'elsewhere' }) })] },
    want: ['event Warning FailedBinding'],
  },
  {
    name: 'the same with the claim\'s uid in the claimRef: still another namespace\'s (FailedBinding)',
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v' }),
    w: { volumes: [vol('v', '1Gi', { claimRef: ref('c', { namespace: 'elsewhere', uid: 'uid-c' }) })] },
    want: ['event Warning FailedBinding'],
  },
  { name: 'a claim of zero bytes naming a free volume is not bound (VolumeMismatch)', decide: 'claim', claim: claim('c', '0', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
  { name: 'a claim with no valid request naming a free volume is not bound (VolumeMismatch)', decide: 'claim', claim: claim('c', 'lots', { volumeName: 'v' }), w: { volumes: [vol('v', '1Gi')] }, want: ['event Warning VolumeMismatch'] },
  { name: 'a named volume of zero capacity is not bound (VolumeMismatch)', decide: 'claim', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', '0')] }, want: ['event Warning VolumeMismatch'] },
  { name: 'a named volume with no valid capacity is not bound (VolumeMismatch)', decide: 'claim', claim: claim('c', '1Gi', { volumeName: 'v' }), w: { volumes: [vol('v', 'lots')] }, want: ['event Warning VolumeMismatch'] },
];

describe('a claim naming its volume: edges a mutation run found untested', function () {
  for (const c of named) {
    it(c.name, function () {
      expect(decided(c)).to.deep.equal(c.want);
    });
  }
});
