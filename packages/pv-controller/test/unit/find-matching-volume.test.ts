import { expect } from 'chai';
import type { Node, PersistentVolume } from '@topovol/shared';
import { findBestVolume, findMatchingVolume } from '../../src/binder/find-matching-volume.js';
import type { MatchOptions, VolumeCandidates } from '../../src/binder/find-matching-volume.js';
import { VolumeIndex } from '../../src/binder/volume-index.js';
import { claim, node, vol } from './world-fixture.js';

const zoneAffinity = (zone: string) => ({
  required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [zone] }] }] },
});

// Matching rules of upstream's FindMatchingVolume (k8s.io/component-helpers/storage/volume/pv_helpers.go).
describe('findMatchingVolume', function () {
  const cases: { name: string; claim: ReturnType<typeof claim>; volumes: ReturnType<typeof vol>[]; opts?: Parameters<typeof findMatchingVolume>[2]; want: string | undefined }[] = [
    { name: 'smallest that fits', claim: claim('c', '1Gi'), volumes: [vol('big', '10Gi'), vol('fit', '2Gi'), vol('small', '500Mi')], want: 'fit' },
    { name: 'exact size', claim: claim('c', '1Gi'), volumes: [vol('a', '1Gi'), vol('b', '2Gi')], want: 'a' },
    { name: 'none big enough', claim: claim('c', '5Gi'), volumes: [vol('a', '1Gi')], want: undefined },
    { name: 'class must match', claim: claim('c', '1Gi', { storageClassName: 'gold' }), volumes: [vol('plain', '1Gi'), vol('gold', '2Gi', { storageClassName: 'gold' })], want: 'gold' },
    { name: 'class-less claim binds only class-less volumes', claim: claim('c', '1Gi'), volumes: [vol('gold', '1Gi', { storageClassName: 'gold' })], want: undefined },
    { name: 'access modes must all be offered', claim: claim('c', '1Gi', { accessModes: ['ReadWriteMany'] }), volumes: [vol('rwo', '1Gi'), vol('rwx', '2Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'] })], want: 'rwx' },
    { name: 'nil volumeMode means Filesystem', claim: claim('c', '1Gi'), volumes: [vol('block', '1Gi', { volumeMode: 'Block' }), vol('fs', '2Gi', { volumeMode: 'Filesystem' })], want: 'fs' },
    { name: 'Block claim needs a Block volume', claim: claim('c', '1Gi', { volumeMode: 'Block' }), volumes: [vol('fs', '1Gi'), vol('block', '2Gi', { volumeMode: 'Block' })], want: 'block' },
    { name: 'label selector', claim: claim('c', '1Gi', { selector: { matchLabels: { tier: 'gold' } } }), volumes: [vol('plain', '1Gi'), vol('golden', '3Gi', { labels: { tier: 'gold' } })], want: 'golden' },
    { name: 'selector with expressions', claim: claim('c', '1Gi', { selector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['slow'] }] } }), volumes: [vol('slow', '1Gi', { labels: { tier: 'slow' } }), vol('fast', '2Gi', { labels: { tier: 'fast' } })], want: 'fast' },
    { name: 'skips volumes being deleted', claim: claim('c', '1Gi'), volumes: [vol('dying', '1Gi', { deleting: true }), vol('ok', '2Gi')], want: 'ok' },
    { name: 'skips volumes claimed by another claim', claim: claim('c', '1Gi'), volumes: [vol('taken', '1Gi', { claimRef: { namespace: 'ns', name: 'other', uid: 'x' } }), vol('ok', '2Gi')], want: 'ok' },
    { name: 'skips Released volumes', claim: claim('c', '1Gi'), volumes: [vol('rel', '1Gi', { phase: 'Released' }), vol('ok', '2Gi')], want: 'ok' },
    // A divergence (docs/divergences.md): upstream checks affinity only against a node, so a claim
    // without one took a volume no node can reach, and its pods could never be scheduled.
    ...(
      [
        ['an empty term', { required: { nodeSelectorTerms: [{}] } }],
        ['Gt with a value that is no integer', { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'size', operator: 'Gt', values: ['big'] }] }] } }],
        ['no terms at all', { required: { nodeSelectorTerms: [] } }],
      ] as [string, ReturnType<typeof zoneAffinity>][]
    ).flatMap(([what, nodeAffinity]) => [
      { name: `without a node, skips a free volume whose affinity matches no node (${what})`, claim: claim('c', '1Gi'), volumes: [vol('never', '1Gi', { nodeAffinity }), vol('ok', '2Gi')], want: 'ok' },
      { name: `without a node, a volume pre-bound to the claim is taken all the same (${what})`, claim: claim('c', '1Gi'), volumes: [vol('mine', '1Gi', { nodeAffinity, claimRef: { namespace: 'ns', name: 'c' } }), vol('ok', '2Gi')], want: 'mine' },
    ]),
    { name: 'without a node, a free volume with a usable affinity is still a candidate', claim: claim('c', '1Gi'), volumes: [vol('zonal', '1Gi', { nodeAffinity: zoneAffinity('a') }), vol('ok', '2Gi')], want: 'zonal' },
    { name: 'pre-bound by name wins over smaller', claim: claim('c', '1Gi'), volumes: [vol('small', '1Gi'), vol('mine', '5Gi', { claimRef: { namespace: 'ns', name: 'c' } })], want: 'mine' },
    { name: 'pre-bound by uid wins', claim: claim('c', '1Gi'), volumes: [vol('small', '1Gi'), vol('mine', '5Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } })], want: 'mine' },
    { name: 'pre-bound to an older claim of the same name (uid differs) is not ours', claim: claim('c', '1Gi'), volumes: [vol('old', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'old-uid' } })], want: undefined },
    // findByClaim (index.go) asks group by group from the fewest access modes: the narrower group's
    // pre-bound volume is met first, whatever the names.
    {
      name: 'two pre-bound volumes: the one in the group of fewer access modes, as upstream',
      claim: claim('c', '1Gi'),
      volumes: [vol('a-wide', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'], claimRef: { namespace: 'ns', name: 'c' } }), vol('b-narrow', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } })],
      want: 'b-narrow',
    },
    {
      name: 'two pre-bound volumes in one group: the first by name',
      claim: claim('c', '1Gi'),
      volumes: [vol('b', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } }), vol('a', '2Gi', { claimRef: { namespace: 'ns', name: 'c' } })],
      want: 'a',
    },
    { name: 'pre-bound but too small is not used', claim: claim('c', '5Gi'), volumes: [vol('mine', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } })], want: undefined },
    { name: 'delayed binding without a node: only pre-bound', claim: claim('c', '1Gi'), volumes: [vol('free', '1Gi')], opts: { delayBinding: true }, want: undefined },
    { name: 'delayed binding: pre-bound (scheduler) is completed', claim: claim('c', '1Gi'), volumes: [vol('pre', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } })], opts: { delayBinding: true }, want: 'pre' },
    { name: 'with a node: only reachable volumes', claim: claim('c', '1Gi'), volumes: [vol('a', '1Gi', { nodeAffinity: zoneAffinity('a') }), vol('b', '2Gi', { nodeAffinity: zoneAffinity('b') })], opts: { delayBinding: true, node: node('n', { 'topology.kubernetes.io/zone': 'b' }) }, want: 'b' },
    { name: 'with a node: volumes without affinity are reachable', claim: claim('c', '1Gi'), volumes: [vol('any', '1Gi')], opts: { delayBinding: true, node: node('n') }, want: 'any' },
    { name: 'pre-bound but unreachable from the node: still the claim\'s, never a free one instead', claim: claim('c', '1Gi'), volumes: [vol('pre', '1Gi', { claimRef: { namespace: 'ns', name: 'c' }, nodeAffinity: zoneAffinity('a') }), vol('b', '1Gi')], opts: { delayBinding: true, node: node('n', { 'topology.kubernetes.io/zone': 'b' }) }, want: 'pre' },
    { name: 'claim with an invalid request matches nothing', claim: claim('c', 'lots'), volumes: [vol('a', '1Gi')], want: undefined },
    // Absurd sizes the API server accepts: compared exactly, as resource.Quantity.Cmp does. As floats, 2^63 - 1 and 2^63 are equal.
    { name: '2^63 bytes do not fit a volume one byte smaller', claim: claim('c', '9223372036854775808'), volumes: [vol('short', '9223372036854775807')], want: undefined },
    // ParseQuantity caps binary-SI values at 2^63 - 1: the API server stores a volume of 8Ei as 9223372036854775807.
    { name: '2^63 bytes do not fit a volume of 8Ei either (capped at 2^63 - 1), but fit one of 2^63 in digits', claim: claim('c', '9223372036854775808'), volumes: [vol('short', '9223372036854775807'), vol('ei', '8Ei'), vol('exact', '9223372036854775808')], want: 'exact' },
    { name: '1e30 bytes: the smallest volume that holds them', claim: claim('c', '1e30'), volumes: [vol('ei', '8Ei'), vol('huge', '1e31'), vol('just', '1000000000000000000000000000000')], want: 'just' },
    { name: 'a fraction of a byte rounds up to one byte', claim: claim('c', '0.5m'), volumes: [vol('one', '1'), vol('gi', '1Gi')], want: 'one' },
    // Topovol: each size is rounded up to whole bytes, as Quantity.Value() rounds (docs/divergences.md, "Sizes"); upstream's matching compares 1500m and 2 exactly and refuses.
    { name: 'a volume of 1500m (1.5 bytes, rounded up to 2) is taken for a claim of 2 bytes', claim: claim('c', '2'), volumes: [vol('frac', '1500m')], want: 'frac' },
    // Negative or zero sizes only come from objects that bypassed validation: never matched.
    { name: 'a negative request matches nothing', claim: claim('c', '-1Gi'), volumes: [vol('a', '1Gi')], want: undefined },
    { name: 'a volume of negative capacity is never chosen', claim: claim('c', '1'), volumes: [vol('neg', '-1Gi'), vol('zero', '0'), vol('ok', '1Ki')], want: 'ok' },
    // index.go: groups by access modes, fewest modes first, before size.
    { name: 'fewest access modes wins over smaller size', claim: claim('c', '1Gi'), volumes: [vol('rwo', '5Gi'), vol('rwo-rwx', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'] })], want: 'rwo' },
    { name: 'a more capable volume when no exact group fits', claim: claim('c', '3Gi'), volumes: [vol('rwo', '1Gi'), vol('rwo-rwx', '5Gi', { accessModes: ['ReadWriteMany', 'ReadWriteOnce'] })], want: 'rwo-rwx' },
    { name: 'pre-bound volume whose access modes do not cover the claim is not used', claim: claim('c', '1Gi', { accessModes: ['ReadWriteMany'] }), volumes: [vol('mine', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } })], want: undefined },
    { name: 'pre-bound wins even from a larger access-mode group (upstream takes a free one from a smaller group first)', claim: claim('c', '1Gi'), volumes: [vol('free', '1Gi'), vol('mine', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'], claimRef: { namespace: 'ns', name: 'c' } })], want: 'mine' },
    { name: 'pre-bound ignores class, selector and phase', claim: claim('c', '1Gi', { storageClassName: 'gold', selector: { matchLabels: { a: 'b' } } }), volumes: [vol('mine', '1Gi', { storageClassName: 'other', phase: 'Pending', claimRef: { namespace: 'ns', name: 'c' } })], want: 'mine' },
    { name: 'pre-bound volume being deleted is not used', claim: claim('c', '1Gi'), volumes: [vol('mine', '1Gi', { deleting: true, claimRef: { namespace: 'ns', name: 'c' } }), vol('free', '2Gi')], want: 'free' },
    { name: 'volumeAttributesClassName must match (free)', claim: claim('c', '1Gi', { volumeAttributesClassName: 'gold' }), volumes: [vol('plain', '1Gi'), vol('gold', '2Gi', { volumeAttributesClassName: 'gold' })], want: 'gold' },
    { name: 'volumeAttributesClassName must match (pre-bound)', claim: claim('c', '1Gi'), volumes: [vol('mine', '1Gi', { volumeAttributesClassName: 'gold', claimRef: { namespace: 'ns', name: 'c' } })], want: undefined },
    // Topovol (docs/divergences.md): a new volume, not yet written Available, is free too; upstream waits for the Available write.
    { name: 'a new volume (Pending, not yet Available) is free', claim: claim('c', '1Gi'), volumes: [vol('new', '1Gi', { phase: 'Pending' }), vol('ok', '2Gi')], want: 'new' },
    { name: 'a new volume without any phase yet is free', claim: claim('c', '1Gi'), volumes: [{ ...vol('new', '1Gi'), status: {} }, vol('ok', '2Gi')], want: 'new' },
    { name: 'skips Released volumes without a claimRef', claim: claim('c', '1Gi'), volumes: [vol('rel', '1Gi', { phase: 'Released' }), vol('ok', '2Gi')], want: 'ok' },
    { name: 'skips Failed volumes without a claimRef until they are Available', claim: claim('c', '1Gi'), volumes: [vol('failed', '1Gi', { phase: 'Failed' })], want: undefined },
    {
      name: 'an unreachable pre-bound volume does not hide a reachable one',
      claim: claim('c', '1Gi'),
      volumes: [vol('a-pre', '1Gi', { claimRef: { namespace: 'ns', name: 'c' }, nodeAffinity: zoneAffinity('a') }), vol('b-pre', '1Gi', { claimRef: { namespace: 'ns', name: 'c' }, nodeAffinity: zoneAffinity('b') })],
      opts: { delayBinding: true, node: node('n', { 'topology.kubernetes.io/zone': 'b' }) },
      want: 'b-pre',
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const opts = c.opts ?? { delayBinding: false };
      expect(findMatchingVolume(c.claim, c.volumes, opts)?.metadata?.name, 'findMatchingVolume').to.equal(c.want);
      // The same rule through the binder's indexes (the production path) must agree.
      const { candidates } = indexed(c.volumes, opts.node ? [opts.node] : []);
      expect(findBestVolume(c.claim, candidates, opts)?.metadata?.name, 'findBestVolume over VolumeIndex').to.equal(c.want);
    });
  }
});

/** A VolumeIndex fed with these objects, and the VolumeCandidates view the binder builds on it. */
function indexed(volumes: PersistentVolume[], nodes: Node[]): { index: VolumeIndex; candidates: VolumeCandidates; byName: Map<string, PersistentVolume> } {
  const index = new VolumeIndex();
  const byName = new Map(volumes.map((v) => [v.metadata!.name!, v]));
  for (const n of nodes) index.upsertNode(n);
  for (const v of volumes) index.upsertVolume(v);
  const candidates: VolumeCandidates = {
    preBoundVolumes: (ns, name) => index.preBoundTo(ns, name).map((n) => byName.get(n)!),
    accessModeGroups: (cls) => index.accessModeGroups(cls),
    freeVolumes: (cls, group, minBytes, nodeName) =>
      [...(nodeName === undefined ? index.freeVolumes(cls, group, minBytes) : index.freeVolumesForNode(cls, group, nodeName, minBytes))].map((n) => byName.get(n)!),
  };
  return { index, candidates, byName };
}

// KEP-490 "Performance and Optimizations": per-node candidate maps kept up to date as volumes and
// node labels change. Checked against the brute-force findMatchingVolume on random clusters.
describe('VolumeIndex agrees with a full scan', function () {
  const zones = ['a', 'b', 'c'];
  const sizes = ['1Gi', '2Gi', '5Gi', '500Mi'];
  let seed = 42;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 20; round++) {
    it(`random cluster ${round}: same choice for every node and claim, after volume and node label changes`, function () {
      const nodes = zones.map((z, i) => node(`n${i}`, { 'topology.kubernetes.io/zone': z }));
      const volumes: PersistentVolume[] = [];
      for (let i = 0; i < 40; i++) {
        const cls = rnd(3) === 0 ? 'gold' : '';
        const affinity = rnd(2) === 0 ? { nodeAffinity: zoneAffinity(zones[rnd(3)]!) } : {};
        const ref = [{ claimRef: { namespace: 'ns', name: `other-${i}`, uid: 'x' } }, { claimRef: { namespace: 'ns', name: 'c' } }, {}, {}, {}, {}][rnd(6)]!;
        const accessModes = [['ReadWriteOnce'], ['ReadWriteOnce'], ['ReadWriteMany', 'ReadWriteOnce'], ['ReadOnlyMany'], ['ReadWriteMany']][rnd(5)]!;
        const phase = ['Available', 'Available', 'Available', 'Released', 'Pending'][rnd(5)]!;
        volumes.push(vol(`v${i}`, sizes[rnd(4)]!, { storageClassName: cls, ...affinity, ...ref, accessModes, phase }));
      }
      const { index, candidates, byName } = indexed(volumes, nodes);
      // Churn: relabel a node, delete some volumes, bind one.
      nodes[0] = node('n0', { 'topology.kubernetes.io/zone': zones[rnd(3)]! });
      index.upsertNode(nodes[0]);
      for (let i = 0; i < 5; i++) {
        const victim = `v${rnd(40)}`;
        index.deleteVolume(victim);
        byName.delete(victim);
      }
      const rebound = byName.get(`v${rnd(40)}`);
      if (rebound) {
        const next = { ...rebound, spec: { ...rebound.spec, claimRef: { namespace: 'ns', name: 'someone', uid: 'y' } } };
        byName.set(next.metadata!.name!, next);
        index.upsertVolume(next);
      }
      const live = [...byName.values()];
      for (const cls of ['', 'gold']) {
        for (const [size, accessModes] of sizes.flatMap((sz) => [['ReadWriteOnce'], ['ReadWriteMany'], ['ReadOnlyMany', 'ReadWriteOnce']].map((m) => [sz, m] as const))) {
          const c = claim('c', size, { storageClassName: cls, accessModes: [...accessModes] });
          for (const opts of [{ delayBinding: false } as MatchOptions, ...nodes.map((n): MatchOptions => ({ delayBinding: true, node: n }))]) {
            expect(findBestVolume(c, candidates, opts)?.metadata?.name, `${cls}/${size}/${opts.node?.metadata?.name ?? '-'}`).to.equal(findMatchingVolume(c, live, opts)?.metadata?.name);
          }
        }
      }
    });
  }
});
