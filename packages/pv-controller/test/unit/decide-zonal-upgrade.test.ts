import { expect } from 'chai';
import type { PersistentVolume } from '@topovol/shared';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import type { VolumeNodeAffinity } from '../../src/zonal/decide-zonal-upgrade.js';

const BZ = 'failure-domain.beta.kubernetes.io/zone';
const BR = 'failure-domain.beta.kubernetes.io/region';
const Z = 'topology.kubernetes.io/zone';
const R = 'topology.kubernetes.io/region';

function volume(labels: Record<string, string> | undefined, extra: { nodeAffinity?: VolumeNodeAffinity; deletionTimestamp?: string } = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'v', labels, deletionTimestamp: extra.deletionTimestamp },
    spec: { capacity: { storage: '100Gi' }, storageClassName: 'my-class', nodeAffinity: extra.nodeAffinity },
  };
}

/** The single required term as [key, values] pairs, in order. */
type Reqs = [string, string[]][];
const affinity = (reqs: Reqs): VolumeNodeAffinity => ({
  required: { nodeSelectorTerms: [{ matchExpressions: reqs.map(([key, values]) => ({ key, operator: 'In', values })) }] },
});

// Seed 001 "Zonal PV Upgrade"; zone parsing follows upstream's volume helpers (LabelZonesToSet)
// and the PV label admission plugin's requirement building, re-expressed as a table.
describe('decideZonalUpgrade', function () {
  const cases: { name: string; pv: PersistentVolume; want: { upgrade: Reqs } | { none: string } | { malformed: RegExp } }[] = [
    { name: 'single zone, GA label', pv: volume({ [Z]: 'us-central1-a' }), want: { upgrade: [[Z, ['us-central1-a']]] } },
    { name: 'single zone, beta label', pv: volume({ [BZ]: 'us-central1-a' }), want: { upgrade: [[BZ, ['us-central1-a']]] } },
    { name: 'region only (beta)', pv: volume({ [BR]: 'us-central1' }), want: { upgrade: [[BR, ['us-central1']]] } },
    { name: 'region only (GA)', pv: volume({ [R]: 'us-central1' }), want: { upgrade: [[R, ['us-central1']]] } },
    {
      name: "zone + region: the seed's zonal-volume-1",
      pv: volume({ [BZ]: 'us-central1-a', [BR]: 'us-central1' }),
      want: { upgrade: [[BZ, ['us-central1-a']], [BR, ['us-central1']]] },
    },
    {
      name: "multi-zone: the seed's multi-zonal-volume-1",
      pv: volume({ [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' }),
      want: { upgrade: [[BZ, ['us-central1-a', 'us-central1-b']], [BR, ['us-central1']]] },
    },
    { name: 'multi-zone a__b__c (GA)', pv: volume({ [Z]: 'a__b__c' }), want: { upgrade: [[Z, ['a', 'b', 'c']]] } },
    { name: 'multi-zone values are a sorted set, as LabelZonesToSet', pv: volume({ [Z]: 'c__a__c__b' }), want: { upgrade: [[Z, ['a', 'b', 'c']]] } },
    { name: 'region values are never split', pv: volume({ [R]: 'r1__r2' }), want: { upgrade: [[R, ['r1__r2']]] } },
    {
      name: 'both label families on one PV: each keeps its own keys, one term',
      pv: volume({ [BZ]: 'us-east1-b', [BR]: 'us-east1', [Z]: 'us-east1-b__us-east1-c', [R]: 'us-east1' }),
      want: { upgrade: [[Z, ['us-east1-b', 'us-east1-c']], [R, ['us-east1']], [BZ, ['us-east1-b']], [BR, ['us-east1']]] },
    },
    { name: 'other labels are ignored', pv: volume({ app: 'db', [Z]: 'z1' }), want: { upgrade: [[Z, ['z1']]] } },
    { name: 'already has nodeAffinity: never changed', pv: volume({ [BZ]: 'us-central1-a' }, { nodeAffinity: affinity([['kubernetes.io/hostname', ['n1']]]) }), want: { none: 'hasNodeAffinity' } },
    { name: 'an empty nodeAffinity still counts as set', pv: volume({ [Z]: 'z1' }, { nodeAffinity: {} }), want: { none: 'hasNodeAffinity' } },
    { name: 'nodeAffinity set wins over malformed labels (no warning)', pv: volume({ [Z]: 'a____b' }, { nodeAffinity: affinity([[Z, ['a']]]) }), want: { none: 'hasNodeAffinity' } },
    { name: 'terminating PV: left alone', pv: volume({ [Z]: 'z1' }, { deletionTimestamp: '2026-01-01T00:00:00Z' }), want: { none: 'terminating' } },
    { name: 'malformed: empty element a____b', pv: volume({ [BZ]: 'a____b' }), want: { malformed: /failure-domain\.beta\.kubernetes\.io\/zone="a____b".*empty zone/ } },
    { name: 'malformed: leading delimiter __a', pv: volume({ [Z]: '__a' }), want: { malformed: /topology\.kubernetes\.io\/zone="__a"/ } },
    { name: 'malformed: trailing delimiter a__', pv: volume({ [Z]: 'a__' }), want: { malformed: /topology\.kubernetes\.io\/zone="a__"/ } },
    { name: 'malformed: a___b leaves "_b", not a valid node-selector value', pv: volume({ [Z]: 'a___b' }), want: { malformed: /"_b" is not a valid zone/ } },
    { name: 'malformed: empty zone value', pv: volume({ [Z]: '' }), want: { malformed: /topology\.kubernetes\.io\/zone=""/ } },
    { name: 'malformed: empty region value', pv: volume({ [BR]: '' }), want: { malformed: /failure-domain\.beta\.kubernetes\.io\/region="".*region must not be empty/ } },
    { name: 'malformed zone with a good region: no partial affinity', pv: volume({ [Z]: 'a____b', [R]: 'r' }), want: { malformed: /topology\.kubernetes\.io\/zone="a____b"/ } },
    { name: 'no labels at all', pv: volume(undefined), want: { none: 'noZonalLabels' } },
    { name: 'only unrelated labels', pv: volume({ app: 'db', 'kubernetes.io/hostname': 'n1' }), want: { none: 'noZonalLabels' } },
  ];

  for (const c of cases) {
    it(c.name, function () {
      const got = decideZonalUpgrade(c.pv);
      if ('upgrade' in c.want) {
        expect(got.kind).to.equal('upgrade');
        if (got.kind === 'upgrade') expect(got.nodeAffinity).to.deep.equal(affinity(c.want.upgrade));
      } else if ('none' in c.want) {
        expect(got).to.deep.equal({ kind: 'none', why: c.want.none });
      } else {
        expect(got.kind).to.equal('malformed');
        if (got.kind === 'malformed') expect(got.reason).to.match(c.want.malformed);
      }
    });
  }

  it('never modifies its input (labels are kept; the actuator writes only nodeAffinity)', function () {
    const pv = volume({ [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' });
    const before = structuredClone(pv);
    decideZonalUpgrade(pv);
    expect(pv).to.deep.equal(before);
  });

  it('is idempotent: the upgraded PV needs nothing more', function () {
    const pv = volume({ [BZ]: 'us-central1-a', [BR]: 'us-central1' });
    const first = decideZonalUpgrade(pv);
    expect(first.kind).to.equal('upgrade');
    if (first.kind !== 'upgrade') return;
    const upgraded = { ...pv, spec: { ...pv.spec, nodeAffinity: first.nodeAffinity } };
    expect(decideZonalUpgrade(upgraded)).to.deep.equal({ kind: 'none', why: 'hasNodeAffinity' });
  });

  it('summarises the affinity for Events and logs', function () {
    const got = decideZonalUpgrade(volume({ [BZ]: 'us-central1-a__us-central1-b', [BR]: 'us-central1' }));
    expect(got.kind === 'upgrade' && got.summary).to.equal(`${BZ} in (us-central1-a, us-central1-b), ${BR} in (us-central1)`);
  });
});
