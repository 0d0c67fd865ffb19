import { expect } from 'chai';
import type { StorageClass } from '@topovol/shared';
import fc from 'fast-check';
import type { CapacityItem } from '../../src/objects/capacity-item.js';
import { desiredItems } from '../../src/objects/desired-items.js';
import { itemCoversNode } from '../../src/objects/failure-refresh.js';

const DRIVER = 'test.csi.topovol.io';
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const RACK = 'topology.test/rack';

type PoolSpec = { poolName: string; domainSegments: { domainLabel: string; value: string }[] };
const sc = (list: PoolSpec[]): StorageClass => ({
  metadata: { name: 'ceph' },
  provisioner: DRIVER,
  volumeBindingMode: 'WaitForFirstConsumer',
  parameters: { topologyConstrainedPools: JSON.stringify(list) },
});
const pool = (poolName: string, domain: Record<string, string>): PoolSpec => ({ poolName, domainSegments: Object.entries(domain).map(([domainLabel, value]) => ({ domainLabel, value })) });
const central = { driverName: DRIVER, immediateBinding: false, ephemeral: false };
const perNode = (node: string) => ({ ...central, onlyNode: node });

/**
 * Per node (a DaemonSet, --capacity-node-name), each instance sees its own node's segment only; the
 * objects kube-scheduler reads are the union of every instance's.
 */
const perNodeItems = (list: PoolSpec[], nodes: Record<string, Record<string, string>>): CapacityItem[] =>
  Object.entries(nodes).flatMap(([name, labels]) => [...desiredItems([sc(list)], [labels], perNode(name)).items.values()].map((d) => d.item));
const covering = (items: CapacityItem[], labels: Record<string, string>): string[] => [...new Set(items.filter((i) => itemCoversNode(i, labels)).map((i) => i.pool))];

describe('capacity: desiredItems per node (Ceph-CSI topologyConstrainedPools)', function () {
  const z1pool = pool('z1pool', { zone: 'z1' });
  const eastpool = pool('eastpool', { region: 'east' });
  const nodes = { n1: { [REGION]: 'east', [ZONE]: 'z1' }, n2: { [REGION]: 'east', [ZONE]: 'z2' } };

  it("a later pool an earlier one may overlap is published for the node's own segment, not its domain: z1 nodes are not offered eastpool", function () {
    const fromN2 = [...desiredItems([sc([z1pool, eastpool])], [nodes.n2], perNode('n2')).items.values()];
    expect(fromN2.map((d) => [d.item.pool, d.item.segment, d.poolPart ?? false])).to.deep.equal([['eastpool', nodes.n2, true]]);
    const all = perNodeItems([z1pool, eastpool], nodes);
    expect(covering(all, nodes.n1)).to.deep.equal(['z1pool']);
    expect(covering(all, nodes.n2)).to.deep.equal(['eastpool']);
  });

  it("per node, a pool an earlier one takes on this node is not reported as never chosen (other nodes' instances publish it); centrally it is, when it serves no node", function () {
    const reasons = (list: PoolSpec[], segs: Record<string, string>[], opts: typeof central): string[] => desiredItems([sc(list)], segs, opts).problems.map((p) => `${p.reason} ${p.message.split(':')[0]}`);
    expect(reasons([z1pool, eastpool], [nodes.n1], perNode('n1'))).to.deep.equal([]);
    expect(reasons([z1pool, eastpool], [nodes.n1], central)).to.deep.equal(['PoolNeverChosen pool eastpool is never chosen']);
    expect(reasons([z1pool, eastpool], Object.values(nodes), central)).to.deep.equal([]);
    // A domainLabel written with its prefix is never chosen on any node: said per node too.
    expect(reasons([z1pool, pool('bad', { [REGION]: 'east' })], [nodes.n2], perNode('n2'))).to.include('PoolNeverChosen pool bad is never chosen');
  });

  it('central mode is unchanged: eastpool per segment it serves, z1pool as its domain', function () {
    const got = [...desiredItems([sc([z1pool, eastpool])], Object.values(nodes), central).items.values()];
    expect(got.map((d) => [d.item.pool, d.item.segment, d.poolPart ?? false])).to.deep.equal([
      ['z1pool', { [ZONE]: 'z1' }, false],
      ['eastpool', nodes.n2, true],
    ]);
    // A region pool listed first: its whole domain, as before.
    const first = [...desiredItems([sc([eastpool, z1pool])], Object.values(nodes), central).items.values()];
    expect(first.map((d) => [d.item.pool, d.item.segment])).to.deep.equal([['eastpool', { [REGION]: 'east' }]]);
  });

  it("per node, every pool is published for the node's own segment, never its whole domain (the instance cannot see the domain's other nodes)", function () {
    const first = [...desiredItems([sc([eastpool, z1pool])], [nodes.n2], perNode('n2')).items.values()];
    expect(first.map((d) => [d.item.pool, d.item.segment, d.poolPart ?? false])).to.deep.equal([['eastpool', nodes.n2, true]]);
    // Pools of other zones listed before it (no node can match both): its own segment all the same.
    const zones = [pool('z1pool', { zone: 'z1' }), pool('z3pool', { region: 'west', zone: 'z3' }), pool('z2pool', { zone: 'z2' })];
    const z2 = [...desiredItems([sc(zones)], [nodes.n2], perNode('n2')).items.values()];
    expect(z2.map((d) => [d.item.pool, d.item.segment, d.poolPart ?? false])).to.deep.equal([['z2pool', nodes.n2, true]]);
    // Centrally, seeing every node: each zone pool is its whole domain.
    const c = [...desiredItems([sc(zones)], Object.values(nodes), central).items.values()];
    expect(c.map((d) => [d.item.pool, d.item.segment])).to.deep.equal([
      ['z1pool', { [ZONE]: 'z1' }],
      ['z2pool', { [ZONE]: 'z2' }],
    ]);
    // A node of the region with no driver registered (no instance there) is covered by no object.
    const all = perNodeItems([eastpool], nodes);
    expect(covering(all, { [REGION]: 'east', [ZONE]: 'z9' })).to.deep.equal([]);
  });

  it("property: per node, every node's segment is offered the pool Ceph-CSI picks for it, and no other (nodes labelled to one depth)", function () {
    // Every node with the same keys, as a per-node driver's CSINode keys give them: a node's segment
    // then never selects a deeper one's nodes (telling those apart needs every segment, deeperKeys).
    const label = fc.constantFrom(REGION, ZONE, RACK);
    const value = fc.constantFrom('a', 'b');
    const domain = fc.dictionary(label, value, { minKeys: 1, maxKeys: 3 });
    const world = fc
      .subarray([REGION, ZONE, RACK])
      .chain((keys) => fc.tuple(fc.constant(keys), fc.array(fc.array(value, { minLength: keys.length, maxLength: keys.length }), { minLength: 1, maxLength: 6 })));
    fc.assert(
      fc.property(fc.array(domain, { minLength: 1, maxLength: 4 }), world, (domains, [keys, rows]) => {
        const segs = rows.map((r) => Object.fromEntries(keys.map((k, i) => [k, r[i]!])));
        const list = domains.map((d, i) => ({ keys: d, spec: pool(`p${i}`, Object.fromEntries(Object.entries(d).map(([k, v]) => [k.slice(k.indexOf('/') + 1), v]))) }));
        const items = perNodeItems(
          list.map((p) => p.spec),
          Object.fromEntries(segs.map((s, i) => [`n${i}`, s])),
        );
        for (const s of segs) {
          const ceph = list.find((p) => Object.entries(p.keys).every(([k, v]) => s[k] === v))?.spec.poolName;
          expect(covering(items, s), JSON.stringify(s)).to.deep.equal(ceph ? [ceph] : []);
        }
      }),
      { numRuns: 500 },
    );
  });
});
