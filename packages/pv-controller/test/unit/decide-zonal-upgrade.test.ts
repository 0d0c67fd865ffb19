import { expect } from 'chai';
import fc from 'fast-check';
import { volumeNodeAffinityMatches } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { decideZonalUpgrade } from '../../src/zonal/decide-zonal-upgrade.js';
import type { VolumeNodeAffinity } from '../../src/zonal/decide-zonal-upgrade.js';

const BZ = 'failure-domain.beta.kubernetes.io/zone';
const BR = 'failure-domain.beta.kubernetes.io/region';
const Z = 'topology.kubernetes.io/zone';
const R = 'topology.kubernetes.io/region';

function volume(labels: Record<string, string> | undefined, extra: { nodeAffinity?: VolumeNodeAffinity; deletionTimestamp?: string; source?: Partial<NonNullable<PersistentVolume['spec']>> } = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'v', labels, deletionTimestamp: extra.deletionTimestamp },
    spec: { capacity: { storage: '100Gi' }, storageClassName: 'my-class', nodeAffinity: extra.nodeAffinity, ...extra.source },
  };
}

/** A requirement: [key, values] is `key In values`, [key] is `key DoesNotExist`. */
type Req = [string, string[]] | [string];
type Term = Req[];
const term = (...reqs: Req[]): Term => reqs;
/** The last term of every upgrade: nodes without any zone/region label, which VolumeZone passes. */
const UNLABELLED: Term = [[Z], [R], [BZ], [BR]];
const affinity = (...terms: Term[]): VolumeNodeAffinity => ({
  required: {
    nodeSelectorTerms: terms.map((t) => ({
      matchExpressions: t.map(([key, values]) => (values ? { key, operator: 'In', values } : { key, operator: 'DoesNotExist' })),
    })),
  },
});

// KEP-490 "Topology-aware volume scheduling", "Zonal PV Upgrade": the affinity accepts what the
// kube-scheduler's VolumeZone filter accepts (pkg/scheduler/framework/plugins/volumezone/
// volume_zone.go), with label values read by LabelZonesToSet (k8s.io/cloud-provider).
describe('decideZonalUpgrade', function () {
  const a = 'us-central1-a';
  const b = 'us-central1-b';
  const r = 'us-central1';
  const cases: { name: string; pv: PersistentVolume; want: { upgrade: Term[] } | { none: string } | { malformed: RegExp } }[] = [
    { name: 'single zone, GA label: the GA key only', pv: volume({ [Z]: a }), want: { upgrade: [term([Z, [a]]), UNLABELLED] } },
    {
      name: 'single zone, beta label: also the GA zone on nodes without the beta one',
      pv: volume({ [BZ]: a }),
      want: { upgrade: [term([BZ, [a]]), term([BZ], [Z, [a]]), UNLABELLED] },
    },
    { name: 'region only (beta)', pv: volume({ [BR]: r }), want: { upgrade: [term([BR, [r]]), term([BR], [R, [r]]), UNLABELLED] } },
    { name: 'region only (GA)', pv: volume({ [R]: r }), want: { upgrade: [term([R, [r]]), UNLABELLED] } },
    {
      name: "zone + region: KEP-490's zonal-volume-1, its own term first",
      pv: volume({ [BZ]: a, [BR]: r }),
      want: {
        upgrade: [term([BZ, [a]], [BR, [r]]), term([BZ, [a]], [BR], [R, [r]]), term([BZ], [Z, [a]], [BR, [r]]), term([BZ], [Z, [a]], [BR], [R, [r]]), UNLABELLED],
      },
    },
    {
      name: "multi-zone: KEP-490's multi-zonal-volume-1",
      pv: volume({ [BZ]: `${a}__${b}`, [BR]: r }),
      want: {
        upgrade: [term([BZ, [a, b]], [BR, [r]]), term([BZ, [a, b]], [BR], [R, [r]]), term([BZ], [Z, [a, b]], [BR, [r]]), term([BZ], [Z, [a, b]], [BR], [R, [r]]), UNLABELLED],
      },
    },
    { name: 'multi-zone a__b__c (GA)', pv: volume({ [Z]: 'a__b__c' }), want: { upgrade: [term([Z, ['a', 'b', 'c']]), UNLABELLED] } },
    { name: 'multi-zone values are a sorted set, as LabelZonesToSet', pv: volume({ [Z]: 'c__a__c__b' }), want: { upgrade: [term([Z, ['a', 'b', 'c']]), UNLABELLED] } },
    { name: 'region values split on "__" too, as VolumeZone reads every label', pv: volume({ [R]: 'r1__r2' }), want: { upgrade: [term([R, ['r1', 'r2']]), UNLABELLED] } },
    {
      name: 'both label families: the beta fallback intersects with the GA label on the same key',
      pv: volume({ [BZ]: 'us-east1-b', [BR]: 'us-east1', [Z]: 'us-east1-b__us-east1-c', [R]: 'us-east1' }),
      want: {
        upgrade: [
          term([Z, ['us-east1-b', 'us-east1-c']], [R, ['us-east1']], [BZ, ['us-east1-b']], [BR, ['us-east1']]),
          term([Z, ['us-east1-b', 'us-east1-c']], [R, ['us-east1']], [BZ, ['us-east1-b']], [BR]),
          term([Z, ['us-east1-b']], [R, ['us-east1']], [BZ], [BR, ['us-east1']]),
          term([Z, ['us-east1-b']], [R, ['us-east1']], [BZ], [BR]),
          UNLABELLED,
        ],
      },
    },
    {
      name: 'a beta zone disjoint from the GA zone: the fallback term is dropped, never left empty',
      pv: volume({ [BZ]: 'a', [Z]: 'b' }),
      want: { upgrade: [term([Z, ['b']], [BZ, ['a']]), UNLABELLED] },
    },
    { name: 'other labels are ignored', pv: volume({ app: 'db', [Z]: 'z1' }), want: { upgrade: [term([Z, ['z1']]), UNLABELLED] } },
    { name: 'already has nodeAffinity: never changed', pv: volume({ [BZ]: a }, { nodeAffinity: affinity(term(['kubernetes.io/hostname', ['n1']])) }), want: { none: 'hasNodeAffinity' } },
    { name: 'an empty nodeAffinity still counts as set', pv: volume({ [Z]: 'z1' }, { nodeAffinity: {} }), want: { none: 'hasNodeAffinity' } },
    { name: 'nodeAffinity set wins over malformed labels (no warning)', pv: volume({ [Z]: 'a____b' }, { nodeAffinity: affinity(term([Z, ['a']])) }), want: { none: 'hasNodeAffinity' } },
    // csi-translation-lib rewrites an affinity's zone keys to the driver's key when the scheduler reads a migrated volume.
    { name: 'GCE PD (CSI-migrated, topology translated from its labels): left alone', pv: volume({ [BZ]: a, [BR]: r }, { source: { gcePersistentDisk: { pdName: 'disk-1' } } }), want: { none: 'csiTranslated' } },
    { name: 'AWS EBS: left alone', pv: volume({ [Z]: 'z1' }, { source: { awsElasticBlockStore: { volumeID: 'vol-1' } } }), want: { none: 'csiTranslated' } },
    { name: 'Azure Disk: left alone', pv: volume({ [Z]: 'z1' }, { source: { azureDisk: { diskName: 'd', diskURI: 'u' } } }), want: { none: 'csiTranslated' } },
    { name: 'Cinder: left alone', pv: volume({ [Z]: 'z1' }, { source: { cinder: { volumeID: 'c' } } }), want: { none: 'csiTranslated' } },
    { name: 'vSphere: left alone', pv: volume({ [Z]: 'z1' }, { source: { vsphereVolume: { volumePath: '[ds] v.vmdk' } } }), want: { none: 'csiTranslated' } },
    { name: 'a CSI volume is converted (no translation applies)', pv: volume({ [Z]: 'z1' }, { source: { csi: { driver: 'pd.csi.storage.gke.io', volumeHandle: 'h' } } }), want: { upgrade: [term([Z, ['z1']]), UNLABELLED] } },
    { name: 'terminating PV: left alone', pv: volume({ [Z]: 'z1' }, { deletionTimestamp: '2026-01-01T00:00:00Z' }), want: { none: 'terminating' } },
    { name: 'malformed: empty element a____b', pv: volume({ [BZ]: 'a____b' }), want: { malformed: /failure-domain\.beta\.kubernetes\.io\/zone="a____b".*empty element/ } },
    { name: 'malformed: leading delimiter __a', pv: volume({ [Z]: '__a' }), want: { malformed: /topology\.kubernetes\.io\/zone="__a"/ } },
    { name: 'malformed: trailing delimiter a__', pv: volume({ [Z]: 'a__' }), want: { malformed: /topology\.kubernetes\.io\/zone="a__"/ } },
    { name: 'malformed: a___b leaves "_b", not a valid node-selector value', pv: volume({ [Z]: 'a___b' }), want: { malformed: /"_b" is not a valid zone/ } },
    { name: 'malformed: empty zone value', pv: volume({ [Z]: '' }), want: { malformed: /topology\.kubernetes\.io\/zone="".*must not be empty/ } },
    { name: 'malformed: empty region value', pv: volume({ [BR]: '' }), want: { malformed: /failure-domain\.beta\.kubernetes\.io\/region="".*must not be empty/ } },
    { name: 'malformed: a region with an empty element', pv: volume({ [R]: 'r1____r2' }), want: { malformed: /topology\.kubernetes\.io\/region="r1____r2"/ } },
    { name: 'malformed zone with a good region: no partial affinity', pv: volume({ [Z]: 'a____b', [R]: 'r' }), want: { malformed: /topology\.kubernetes\.io\/zone="a____b"/ } },
    { name: 'no labels at all', pv: volume(undefined), want: { none: 'noZonalLabels' } },
    { name: 'only unrelated labels', pv: volume({ app: 'db', 'kubernetes.io/hostname': 'n1' }), want: { none: 'noZonalLabels' } },
  ];

  for (const c of cases) {
    it(c.name, function () {
      const got = decideZonalUpgrade(c.pv);
      if ('upgrade' in c.want) {
        expect(got.kind).to.equal('upgrade');
        if (got.kind === 'upgrade') expect(got.nodeAffinity).to.deep.equal(affinity(...c.want.upgrade));
      } else if ('none' in c.want) {
        expect(got).to.deep.equal({ kind: 'none', why: c.want.none });
      } else {
        expect(got.kind).to.equal('malformed');
        if (got.kind === 'malformed') expect(got.reason).to.match(c.want.malformed);
      }
    });
  }

  it("converts KEP-490's example PV with the KEP's term first, unchanged", function () {
    // zonal-volume-1 from KEP-490's "Zonal PV Upgrade and Downgrade", and the term it shows.
    const got = decideZonalUpgrade(volume({ [BZ]: 'us-central1-a', [BR]: 'us-central1' }));
    expect(got.kind).to.equal('upgrade');
    if (got.kind !== 'upgrade') return;
    expect(got.nodeAffinity.required?.nodeSelectorTerms[0]).to.deep.equal({
      matchExpressions: [
        { key: BZ, operator: 'In', values: ['us-central1-a'] },
        { key: BR, operator: 'In', values: ['us-central1'] },
      ],
    });
  });

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
    expect(got.kind === 'upgrade' && got.summary).to.equal(
      `${BZ} (or ${Z} if absent) in (us-central1-a, us-central1-b), ${BR} (or ${R} if absent) in (us-central1); nodes without zone/region labels too (5 terms)`,
    );
    const ga = decideZonalUpgrade(volume({ [Z]: 'z1' }));
    expect(ga.kind === 'upgrade' && ga.summary).to.equal(`${Z} in (z1); nodes without zone/region labels too (2 terms)`);
  });
});

/**
 * The kube-scheduler's VolumeZone Filter for one PV, rewritten from
 * pkg/scheduler/framework/plugins/volumezone/volume_zone.go (kubernetes v1.37.2) without reference
 * to our code: the oracle the upgraded affinity must agree with on every node.
 */
function volumeZoneFilter(pvLabels: Record<string, string>, nodeLabels: Record<string, string>): boolean {
  const topologyLabels = [BZ, BR, Z, R];
  const translateToGALabel = (k: string): string => (k === BR ? R : k === BZ ? Z : k);
  const has = (labels: Record<string, string>, k: string): boolean => Object.hasOwn(labels, k);
  // getPVTopologies: every topology label goes through LabelZonesToSet; unparsable ones are skipped.
  const pvTopologies: { key: string; values: Set<string> }[] = [];
  for (const key of topologyLabels) {
    if (!has(pvLabels, key)) continue;
    const zones = pvLabels[key]!.split('__').map((z) => z.trim());
    if (zones.some((z) => z === '')) continue;
    pvTopologies.push({ key, values: new Set(zones) });
  }
  if (!topologyLabels.some((k) => has(nodeLabels, k))) return true;
  for (const t of pvTopologies) {
    const key = has(nodeLabels, t.key) ? t.key : translateToGALabel(t.key);
    if (!has(nodeLabels, key) || !t.values.has(nodeLabels[key]!)) return false;
  }
  return true;
}

describe('decideZonalUpgrade agrees with the kube-scheduler VolumeZone filter (property)', function () {
  const KEYS = [Z, R, BZ, BR];
  const optionalKeys = <T>(value: fc.Arbitrary<T>): fc.Arbitrary<Partial<Record<string, T>>> =>
    fc.record(Object.fromEntries(KEYS.map((k) => [k, value])), { requiredKeys: [] });
  // Small pools so PV and node values often meet; PV values may name several zones ("a__b").
  const pvLabels = optionalKeys(fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 }).map((zs) => zs.join('__')));
  const nodeLabels = optionalKeys(fc.constantFrom('a', 'b', 'c', 'd', 'a__b')).map((l) => ({ 'kubernetes.io/hostname': 'n', ...l }));
  const defined = (l: Partial<Record<string, string>>): Record<string, string> => Object.fromEntries(Object.entries(l).filter((e): e is [string, string] => e[1] !== undefined));

  it('a node matches the upgraded nodeAffinity exactly when VolumeZone accepts it today', function () {
    fc.assert(
      fc.property(pvLabels, fc.array(nodeLabels, { minLength: 1, maxLength: 6 }), (pl, nodes) => {
        const labels = defined(pl);
        const decision = decideZonalUpgrade(volume({ ...labels, app: 'db' }));
        expect(decision.kind).to.be.oneOf(['upgrade', 'none']);
        // No zonal labels: nothing is written, and no affinity accepts every node, as VolumeZone does.
        const upgraded = decision.kind === 'upgrade' ? decision.nodeAffinity : undefined;
        for (const nl of nodes) {
          const node = { metadata: { name: 'n', labels: defined(nl) } };
          expect(volumeNodeAffinityMatches(upgraded, node), JSON.stringify({ pv: labels, node: node.metadata.labels, upgraded })).to.equal(volumeZoneFilter(labels, node.metadata.labels));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("the first term is always KEP-490's: each PV label key In its values", function () {
    fc.assert(
      fc.property(pvLabels, (pl) => {
        const labels = defined(pl);
        const decision = decideZonalUpgrade(volume(labels));
        if (decision.kind !== 'upgrade') {
          expect(Object.keys(labels)).to.deep.equal([]);
          return;
        }
        const own = KEYS.filter((k) => labels[k] !== undefined).map((k) => ({ key: k, operator: 'In', values: [...new Set(labels[k]!.split('__'))].sort() }));
        expect(decision.nodeAffinity.required?.nodeSelectorTerms[0]).to.deep.equal({ matchExpressions: own });
      }),
    );
  });
});
