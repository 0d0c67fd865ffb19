import { expect } from 'chai';
import type { CSINode, Node } from '@topovol/shared';
import { computeSegments, domainAncestors, placeNodes, segmentLabelKeys, segmentOfNode } from '../../src/segments/compute-segments.js';
import fc from 'fast-check';
import { deeperKeys } from '../../src/segments/deeper-keys.js';
import { segmentKey } from '../../src/segments/segment.js';
import { parseSegmentMode } from '../../src/segments/segment-mode.js';
import { selfExcludedNodes } from '../../src/segments/unsegmented-nodes.js';
import type { SegmentMode } from '../../src/segments/segment-mode.js';

const DRIVER = 'hostpath.csi.k8s.io';
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const RACK = 'example.com/rack';

const node = (name: string, labels: Record<string, string>): Node => ({ metadata: { name, labels } });
const csiNode = (name: string, drivers: { name: string; topologyKeys?: string[] }[]): CSINode => ({
  metadata: { name },
  spec: { drivers: drivers.map((d) => ({ name: d.name, nodeID: name, topologyKeys: d.topologyKeys })) },
});

const csinode: SegmentMode = { kind: 'csinode' };
// anyNode: these cases are about labels; registration has its own cases below.
const prefix: SegmentMode = { kind: 'prefix', prefix: 'example.com/', anyNode: true };
const domains: SegmentMode = { kind: 'domains', labels: [REGION, ZONE, RACK], anyNode: true };
const registered = csiNode('n1', [{ name: DRIVER }]);

describe('capacity segments (external-provisioner pkg/capacity/topology, KEP-1472 and the ceph-csi topology proposal)', function () {
  describe('segmentOfNode', function () {
    const cases: { name: string; mode: SegmentMode; node: Node; csi?: CSINode; want: Record<string, string> | undefined }[] = [
      { name: 'csinode: the driver\'s keys, values from node labels', mode: csinode, node: node('n1', { [ZONE]: 'z1', other: 'x' }), csi: csiNode('n1', [{ name: DRIVER, topologyKeys: [ZONE] }]), want: { [ZONE]: 'z1' } },
      { name: 'csinode: driver not registered on the node', mode: csinode, node: node('n1', { [ZONE]: 'z1' }), csi: csiNode('n1', [{ name: 'other.csi', topologyKeys: [ZONE] }]), want: undefined },
      { name: 'csinode: no CSINode yet', mode: csinode, node: node('n1', { [ZONE]: 'z1' }), want: undefined },
      { name: 'csinode: a topology key missing as a label skips the node', mode: csinode, node: node('n1', { [ZONE]: 'z1' }), csi: csiNode('n1', [{ name: DRIVER, topologyKeys: [ZONE, RACK] }]), want: undefined },
      { name: 'csinode: a driver without topology keys serves the whole cluster', mode: csinode, node: node('n1', {}), csi: csiNode('n1', [{ name: DRIVER }]), want: {} },
      { name: 'prefix: every label under the prefix', mode: prefix, node: node('n1', { 'example.com/zone': 'z1', 'example.com/rack': 'r3', [ZONE]: 'ignored' }), want: { 'example.com/zone': 'z1', 'example.com/rack': 'r3' } },
      { name: 'prefix: no label under the prefix', mode: prefix, node: node('n1', { [ZONE]: 'z1' }), want: undefined },
      { name: 'domains: the full ordered path', mode: domains, node: node('n1', { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }), want: { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' } },
      { name: 'domains: the longest leading run (no rack label)', mode: domains, node: node('n1', { [REGION]: 'east', [ZONE]: 'z1' }), want: { [REGION]: 'east', [ZONE]: 'z1' } },
      { name: 'domains: a gap stops the run (rack without zone)', mode: domains, node: node('n1', { [REGION]: 'east', [RACK]: 'r1' }), want: { [REGION]: 'east' } },
      { name: 'domains: no outermost label, no domain', mode: domains, node: node('n1', { [ZONE]: 'z1' }), want: undefined },
      // Registration: by default prefix and domains modes count only nodes whose CSINode lists the driver.
      { name: 'prefix: a node without the driver registered does not count', mode: { ...prefix, anyNode: false }, node: node('n1', { 'example.com/zone': 'z1' }), csi: csiNode('n1', [{ name: 'other.csi' }]), want: undefined },
      { name: 'prefix: a registered node counts', mode: { kind: 'prefix', prefix: 'example.com/' }, node: node('n1', { 'example.com/zone': 'z1' }), csi: registered, want: { 'example.com/zone': 'z1' } },
      { name: 'domains: no CSINode, not counted', mode: { kind: 'domains', labels: [REGION, ZONE] }, node: node('n1', { [REGION]: 'east' }), want: undefined },
      { name: 'domains: registered, counted (its topology keys do not matter)', mode: { kind: 'domains', labels: [REGION, ZONE] }, node: node('n1', { [REGION]: 'east' }), csi: registered, want: { [REGION]: 'east' } },
    ];
    for (const c of cases) {
      it(c.name, function () {
        expect(segmentOfNode(c.mode, c.node, c.csi, DRIVER)).to.deep.equal(c.want);
      });
    }
  });

  describe('computeSegments', function () {
    const nodes = [
      node('a1', { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }),
      node('a2', { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }),
      node('b1', { [REGION]: 'east', [ZONE]: 'z2', [RACK]: 'r7' }),
      node('c1', { [REGION]: 'west', [ZONE]: 'z9', [RACK]: 'r1' }),
    ];

    it('removes duplicates and returns a stable order whatever the node order', function () {
      const one = computeSegments(domains, nodes, () => undefined, DRIVER);
      const two = computeSegments(domains, [...nodes].reverse(), () => undefined, DRIVER);
      expect(one).to.have.length(3);
      expect(two).to.deep.equal(one);
    });

    it('follows label changes: relabelling the last node of a segment removes it and adds the new one', function () {
      const before = computeSegments(domains, nodes, () => undefined, DRIVER);
      const moved = nodes.map((n) => (n.metadata?.name === 'b1' ? node('b1', { [REGION]: 'east', [ZONE]: 'z3', [RACK]: 'r7' }) : n));
      const after = computeSegments(domains, moved, () => undefined, DRIVER);
      expect(before).to.deep.include({ [REGION]: 'east', [ZONE]: 'z2', [RACK]: 'r7' });
      expect(after).to.not.deep.include({ [REGION]: 'east', [ZONE]: 'z2', [RACK]: 'r7' });
      expect(after).to.deep.include({ [REGION]: 'east', [ZONE]: 'z3', [RACK]: 'r7' });
    });

    it('drops a removed node\'s segment and ignores nodes being deleted', function () {
      const gone = computeSegments(domains, nodes.filter((n) => n.metadata?.name !== 'c1'), () => undefined, DRIVER);
      expect(gone).to.not.deep.include({ [REGION]: 'west', [ZONE]: 'z9', [RACK]: 'r1' });
      const deleting = computeSegments(domains, nodes.map((n) => (n.metadata?.name === 'c1' ? { ...n, metadata: { ...n.metadata, deletionTimestamp: '2026-11-23T00:00:00Z' } } : n)), () => undefined, DRIVER);
      expect(deleting).to.deep.equal(gone);
    });

    it('csinode mode: a CSINode registering the driver adds the node', function () {
      const ns = [node('n1', { [ZONE]: 'z1' }), node('n2', { [ZONE]: 'z2' })];
      const csis = new Map([['n1', csiNode('n1', [{ name: DRIVER, topologyKeys: [ZONE] }])]]);
      expect(computeSegments(csinode, ns, (n) => csis.get(n), DRIVER)).to.deep.equal([{ [ZONE]: 'z1' }]);
      csis.set('n2', csiNode('n2', [{ name: DRIVER, topologyKeys: [ZONE] }]));
      expect(computeSegments(csinode, ns, (n) => csis.get(n), DRIVER)).to.deep.equal([{ [ZONE]: 'z1' }, { [ZONE]: 'z2' }]);
    });

    it('domains mode gives the hierarchy: every ancestor of each leaf, once', function () {
      const leaves = computeSegments(domains, nodes, () => undefined, DRIVER);
      expect(domainAncestors(domains, leaves)).to.deep.equal([
        { [REGION]: 'east' },
        { [REGION]: 'east', [ZONE]: 'z1' },
        { [REGION]: 'east', [ZONE]: 'z2' },
        { [REGION]: 'west' },
        { [REGION]: 'west', [ZONE]: 'z9' },
      ]);
      expect(domainAncestors(prefix, leaves)).to.deep.equal([]);
    });
  });

  describe('deeperKeys (nodes labelled to different depths)', function () {
    it('a shallower segment overlapped by deeper ones excludes their extra keys; others get nothing', function () {
      const segs: Record<string, string>[] = [{ [REGION]: 'east' }, { [REGION]: 'east', [ZONE]: 'z1' }, { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' }, { [REGION]: 'west' }, { [REGION]: 'north', [ZONE]: 'z7' }];
      const got = deeperKeys(segs);
      expect(Object.fromEntries([...got].map(([k, v]) => [k, v]))).to.deep.equal({
        [segmentKey({ [REGION]: 'east' })]: [RACK, ZONE].sort(),
        [segmentKey({ [REGION]: 'east', [ZONE]: 'z1' })]: [RACK],
      });
    });
    it('property: with the exclusions, every node matches exactly one segment, the one it belongs to', function () {
      fc.assert(
        fc.property(fc.array(fc.record({ r: fc.constantFrom('a', 'b'), z: fc.option(fc.constantFrom('1', '2')), k: fc.option(fc.constantFrom('x', 'y')) }), { minLength: 1, maxLength: 12 }), (specs) => {
          const nodes = specs.map((sp, i) => node(`n${i}`, { [REGION]: sp.r, ...(sp.z ? { [ZONE]: sp.z } : {}), ...(sp.k && sp.z ? { [RACK]: sp.k } : {}) }));
          const segs = computeSegments(domains, nodes, () => undefined, DRIVER);
          const keys = segmentLabelKeys(placeNodes(domains, nodes, () => undefined, DRIVER));
          const deeper = deeperKeys(segs, (k) => keys.get(k));
          for (const n of nodes) {
            const labels = n.metadata!.labels!;
            const matching = segs.filter((s) => Object.entries(s).every(([k, v]) => labels[k] === v) && (deeper.get(segmentKey(s)) ?? []).every((k) => labels[k] === undefined));
            expect(matching).to.deep.equal([segmentOfNode(domains, n, undefined, DRIVER)]);
          }
        }),
      );
    });
    it('property: labels with gaps (rack without zone): every node still matches its own segment, never none', function () {
      fc.assert(
        fc.property(fc.array(fc.record({ r: fc.constantFrom('a', 'b'), z: fc.option(fc.constantFrom('1', '2')), k: fc.option(fc.constantFrom('x', 'y')) }), { minLength: 1, maxLength: 12 }), (specs) => {
          const nodes = specs.map((sp, i) => node(`n${i}`, { [REGION]: sp.r, ...(sp.z ? { [ZONE]: sp.z } : {}), ...(sp.k ? { [RACK]: sp.k } : {}) }));
          const segs = computeSegments(domains, nodes, () => undefined, DRIVER);
          const keys = segmentLabelKeys(placeNodes(domains, nodes, () => undefined, DRIVER));
          const deeper = deeperKeys(segs, (k) => keys.get(k));
          for (const n of nodes) {
            const labels = n.metadata!.labels!;
            const own = segmentOfNode(domains, n, undefined, DRIVER)!;
            const ownExcluded = (deeper.get(segmentKey(own)) ?? []).some((k) => labels[k] !== undefined);
            expect(ownExcluded, `node ${n.metadata!.name} is excluded by its own segment's selector`).to.equal(false);
          }
        }),
      );
    });
    it('a node with rack but no zone is not excluded from its region by a rack it carries', function () {
      const gap = node('gap', { [REGION]: 'east', [RACK]: 'r7' });
      const deep = node('deep', { [REGION]: 'east', [ZONE]: 'z1', [RACK]: 'r1' });
      const segs = computeSegments(domains, [gap, deep], () => undefined, DRIVER);
      const keys = segmentLabelKeys(placeNodes(domains, [gap, deep], () => undefined, DRIVER));
      expect(deeperKeys(segs, (k) => keys.get(k)).get(segmentKey({ [REGION]: 'east' }))).to.deep.equal([ZONE]);
    });
  });

  describe('parseSegmentMode (flags)', function () {
    const cases: { args: [string, string, string, boolean?]; want: SegmentMode | RegExp }[] = [
      { args: ['csinode', '', ''], want: { kind: 'csinode' } },
      { args: ['prefix', 'example.com/', ''], want: { kind: 'prefix', prefix: 'example.com/' } },
      { args: ['prefix', '', ''], want: /needs --capacity-topology-prefix/ },
      { args: ['domains', '', `${REGION};${ZONE};${RACK}`], want: { kind: 'domains', labels: [REGION, ZONE, RACK] } },
      { args: ['domains', '', ''], want: /needs --domain-labels/ },
      { args: ['domains', '', `${REGION}`, true], want: { kind: 'domains', labels: [REGION], anyNode: true } },
      { args: ['domains', '', `${ZONE};${ZONE}`], want: /twice/ },
      { args: ['zones', '', ''], want: /unknown --capacity-topology "zones"/ },
    ];
    for (const c of cases) {
      it(`${c.args.join(' | ')}`, function () {
        const got = parseSegmentMode(...c.args);
        if (c.want instanceof RegExp) expect(got).to.be.a('string').and.match(c.want);
        else expect(got).to.deep.equal(c.want);
      });
    }
  });
});

describe('selfExcludedNodes: nodes no object of their own segment can match', function () {
  const REGION_ = 'topology.kubernetes.io/region';
  const ZONE_ = 'topology.kubernetes.io/zone';
  const n = (name: string, labels: Record<string, string>): Node => ({ metadata: { name, labels } });
  const csi = (keys: string[]): CSINode => ({ metadata: { name: 'x' }, spec: { drivers: [{ name: 'd.example.com', nodeID: 'x', topologyKeys: keys }] } });
  it('csinode: a node whose CSINode lists fewer keys than its labels carry, beside nodes listing them, is reported; the others are not', function () {
    const nodes = [n('old', { [REGION_]: 'east', [ZONE_]: 'z1' }), n('new', { [REGION_]: 'east', [ZONE_]: 'z1' }), n('alone', { [REGION_]: 'west', [ZONE_]: 'z9' })];
    const keys: Record<string, string[]> = { old: [REGION_], new: [REGION_, ZONE_], alone: [REGION_] };
    const csiOf = (name: string): CSINode => csi(keys[name]!);
    const mode = { kind: 'csinode' } as const;
    const segs = computeSegments(mode, nodes, csiOf, 'd.example.com');
    const got = selfExcludedNodes(mode, placeNodes(mode, nodes, csiOf, 'd.example.com'), 'd.example.com', deeperKeys(segs));
    expect(got.map((u) => u.node.metadata?.name)).to.deep.equal(['old']);
    expect(got[0]!.why).to.match(/label\(s\) topology.kubernetes.io\/zone, which its CSINode does not list/);
  });
  it('domains: never (the exclusions leave out what a segment\'s own nodes carry)', function () {
    const mode = { kind: 'domains', labels: [REGION_, ZONE_] } as const;
    const nodes = [n('a', { [REGION_]: 'east' }), n('b', { [REGION_]: 'east', [ZONE_]: 'z1' })];
    const segs = computeSegments(mode, nodes, () => csi([]), 'd.example.com');
    expect(selfExcludedNodes(mode, placeNodes(mode, nodes, () => csi([]), 'd.example.com'), 'd.example.com', deeperKeys(segs))).to.deep.equal([]);
  });
});
