import { expect } from 'chai';
import { loopConditions } from '../../src/aggregate/loop-conditions.js';
import type { LoopHealth } from '../../src/aggregate/loop-conditions.js';
import { loopProblems } from '../../src/aggregate/loop-problems.js';
import { statusEntries } from '../../src/aggregate/status-entries.js';
import type { ClassProblem, DesiredItem } from '../../src/objects/desired-items.js';
import { carryOver, decidePublish, entryProblem, isExpired, planPrune, rfc3339 } from '../../src/status/index.js';
import type { CSIDriverCapacity, CSIDriverCapacityShard, StorageStatus } from '../../src/status/index.js';
import { withoutPools } from '../../src/status/expiry.js';
import { ownsPool, statusApplier } from '../../src/status/managed-fields.js';
import type { FieldSet } from '../../src/status/managed-fields.js';

/**
 * Edges of the capacity controller's aggregated status (CSIDriverCapacity) that a mutation run of
 * its built code found no unit test held: what is carried over, pruned, published and when it
 * expires, and the loop's conditions. capacity-object-edges.test.ts holds the objects' edges.
 */

const DRIVER = 'test.csi.topovol.io';
const GiB = 1n << 30n;

describe('capacity decision edges (a mutation run of the capacity controller): the aggregated status', function () {
  describe('carry-over, prune, publish, expiry', function () {
    const T0 = Date.parse('2026-11-22T10:00:00Z');
    const EXPIRY = 60_000;
    const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    /** fieldsV1 owning, per class, the listed pools (with the listed pool fields). */
    const owning = (classes: Record<string, string[]>, poolFields: string[] = ['f:capacity', 'f:expiryTime']): FieldSet => ({
      'f:status': {
        'f:storage': Object.fromEntries(
          Object.entries(classes).map(([cls, pools]) => [
            `k:${JSON.stringify({ storageClassName: cls })}`,
            { '.': {}, 'f:storageClassName': {}, 'f:pools': Object.fromEntries(pools.map((p) => [`k:${JSON.stringify({ name: p })}`, { '.': {}, 'f:name': {}, ...Object.fromEntries(poolFields.map((f) => [f, {}])) }])) },
          ]),
        ),
      },
    });
    const object = (storage: StorageStatus[], managers: { manager: string; operation?: string; fields: FieldSet }[]): CSIDriverCapacity => ({
      apiVersion: 'topovol.io/v1alpha1',
      kind: 'CSIDriverCapacity',
      metadata: { name: 'drv', resourceVersion: '42', managedFields: managers.map((m) => ({ manager: m.manager, operation: m.operation ?? 'Apply', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: m.fields })) },
      status: { storage },
    });
    const fresh = (expiry: number): StorageStatus[] => [{ storageClassName: 'fast', pools: [{ name: 'p', capacity: '1Gi', expiryTime: iso(expiry) }] }];

    describe('decidePublish', function () {
      const cases: { name: string; live: CSIDriverCapacity; desired: StorageStatus[]; conditions?: boolean; want: string }[] = [
        {
          name: 'a class entry left with no pools is no change',
          live: object([{ storageClassName: 'gone', pools: [] }], [{ manager: 'me', fields: { 'f:status': { 'f:storage': { 'k:{"storageClassName":"gone"}': { '.': {}, 'f:storageClassName': {}, 'f:pools': {} } } } } }]),
          desired: [],
          want: 'none',
        },
        { name: 'a condition changed, storage not: write', live: object([], []), desired: [], conditions: true, want: 'changed' },
        {
          name: 'our pool without an expiry (it would never lapse): refresh',
          live: object([{ storageClassName: 'fast', pools: [{ name: 'p', capacity: '1Gi' }] }], [{ manager: 'me', fields: owning({ fast: ['p'] }, ['f:capacity']) }]),
          desired: fresh(T0 + EXPIRY),
          want: 'refresh',
        },
        { name: 'an owned expiry exactly half an expiry ahead: not yet', live: object(fresh(T0 + EXPIRY / 2), [{ manager: 'me', fields: owning({ fast: ['p'] }) }]), desired: fresh(T0 + EXPIRY), want: 'none' },
        { name: 'an owned expiry exactly one expiry ahead, the new figure older: kept', live: object(fresh(T0 + EXPIRY), [{ manager: 'me', fields: owning({ fast: ['p'] }) }]), desired: fresh(T0 + EXPIRY - 1000), want: 'none' },
      ];
      for (const c of cases) {
        it(c.name, function () {
          const conditions = c.conditions ? [{ type: 'Ready', status: 'True' as const, lastTransitionTime: iso(T0), reason: 'AllMeasured', message: '1 measured' }] : [];
          const d = decidePublish({ live: c.live, fieldManager: 'me', desired: { storage: c.desired, conditions }, nowMs: T0, expiryMs: EXPIRY });
          expect(d.write ? d.reason : 'none').to.equal(c.want);
        });
      }
    });

    describe('planPrune', function () {
      it('an expired pool owned by an Update (kubectl edit) is removed by patch, not applied as that manager', function () {
        const obj = object(fresh(T0 - 1000), [{ manager: 'kubectl-edit', operation: 'Update', fields: owning({ fast: ['p'] }) }]);
        expect(planPrune(obj, T0)).to.deep.equal({
          kind: 'remove',
          patch: [
            { op: 'test', path: '/metadata/resourceVersion', value: '42' },
            { op: 'remove', path: '/status/storage/0/pools/0' },
          ],
          pools: [{ storageClassName: 'fast', pool: 'p' }],
        });
      });

      it('applies as the manager that owns the expired pool, not the first applier listed', function () {
        const obj = object([{ storageClassName: 'fast', pools: [{ name: 'live', capacity: '1Gi', expiryTime: iso(T0 + 5000) }, { name: 'old', capacity: '1Gi', expiryTime: iso(T0 - 1000) }] }], [
          { manager: 'a', fields: owning({ fast: ['live'] }) },
          { manager: 'b', fields: owning({ fast: ['old'] }) },
        ]);
        expect(planPrune(obj, T0)).to.deep.include({ kind: 'applyAs', manager: 'b', pools: [{ storageClassName: 'fast', pool: 'old' }] });
      });
    });

    describe('expiry', function () {
      for (const t of ['not a time', '2026-12-31T23:59:60Z']) {
        it(`an expiryTime JavaScript cannot read (${t}) counts as expired`, function () {
          expect(isExpired({ name: 'p', expiryTime: t }, T0)).to.equal(true);
        });
      }
      it('withoutPools keeps an entry that has no pools list', function () {
        expect(withoutPools({ storage: [{ storageClassName: 'a' }, { storageClassName: 'b', pools: [{ name: 'p' }] }] }, [{ storageClassName: 'b', pool: 'p' }])).to.deep.equal({ storage: [{ storageClassName: 'a' }] });
      });
      it('an expiry is the second the figure expires in, never a later one', function () {
        expect(rfc3339(T0 + 999)).to.equal('2026-11-22T10:00:00Z');
      });
    });

    describe('carryOver', function () {
      const shard = (name: string, manager: string, expiry: number): CSIDriverCapacityShard => ({
        apiVersion: 'topovol.io/v1alpha1',
        kind: 'CSIDriverCapacityShard',
        metadata: { name, managedFields: [{ manager, operation: 'Apply', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: owning({ fast: ['p'] }) }] },
        spec: { driverName: DRIVER, shard: 0 },
        status: { storage: fresh(expiry) },
      });
      const pools = (s: StorageStatus[]): string[] => s.flatMap((x) => (x.pools ?? []).map((p) => `${x.storageClassName}/${p.name}`));

      it('a shard where we own nothing is passed over', function () {
        expect(carryOver([], [shard('d-0', 'someone-else', T0 + 5000)], 'me', () => true, T0, EXPIRY)).to.deep.equal([]);
      });
      it('a pool expiring exactly one expiry ahead is plausible: kept', function () {
        expect(pools(carryOver([], [shard('d-0', 'me', T0 + EXPIRY)], 'me', () => true, T0, EXPIRY))).to.deep.equal(['fast/p']);
      });
      it('a pool found in two shards (resharding) is kept once', function () {
        expect(pools(carryOver([], [shard('d-0', 'me', T0 + 5000), shard('d-1', 'me', T0 + 5000)], 'me', () => true, T0, EXPIRY))).to.deep.equal(['fast/p']);
      });
    });

    describe('managed fields', function () {
      it("our applier's entry, not an Update under the same name", function () {
        const obj = object([], [
          { manager: 'me', operation: 'Update', fields: {} },
          { manager: 'me', fields: owning({ fast: ['p'] }) },
        ]);
        expect(statusApplier(obj, 'me')?.operation).to.equal('Apply');
      });
      it("a pool of the same name in another class is not owned", function () {
        expect(ownsPool(owning({ a: ['p'] }), 'a', 'p')).to.equal(true);
        expect(ownsPool(owning({ a: ['p'] }), 'b', 'p')).to.equal(false);
      });
    });

    it('a pool name over 253 characters is rejected (the API server would refuse the whole write)', function () {
      expect(entryProblem({ storageClassName: 'fast', pool: 'p'.repeat(253), capacity: '1Gi' })).to.equal(undefined);
      expect(entryProblem({ storageClassName: 'fast', pool: 'p'.repeat(254), capacity: '1Gi' })).to.match(/253/);
    });

    it('entries carry when the figure was measured and its maximum volume size; a whole-cluster segment has no nodeTopology', function () {
      const d: DesiredItem = { item: { storageClassName: 'fast', segment: {}, pool: '' }, parameters: {} };
      expect(statusEntries([d], () => ({ available: GiB, maximumVolumeSize: 2n * GiB, atMs: T0 }))).to.deep.equal([
        { storageClassName: 'fast', pool: '<all nodes>', capacity: '1Gi', maximumVolumeSize: '2Gi', measuredAtMs: T0 },
      ]);
    });
  });

  describe('the loop conditions and problems', function () {
    const base: LoopHealth = { total: 2, measured: 2, problems: [] };
    const ready: { name: string; h: Partial<LoopHealth>; want: [string, string] }[] = [
      { name: 'refused writes come before everything the driver says (kube-scheduler reads stale figures)', h: { refused: 'forbidden', unsupported: 'Unimplemented', failing: 'boom', measured: 1 }, want: ['False', 'WritesRefused'] },
      { name: 'GetCapacity unimplemented comes before a failure', h: { measured: 0, unsupported: 'Unimplemented', failing: 'boom' }, want: ['False', 'GetCapacityUnimplemented'] },
      { name: 'a failing call comes before measuring', h: { measured: 1, failing: 'boom' }, want: ['False', 'GetCapacityFailed'] },
      { name: 'some not measured yet', h: { measured: 1 }, want: ['False', 'Measuring'] },
      { name: 'all measured', h: {}, want: ['True', 'AllMeasured'] },
    ];
    for (const c of ready) {
      it(`Ready: ${c.name}`, function () {
        const r = loopConditions({ ...base, ...c.h })[0]!;
        expect([r.status, r.reason]).to.deep.equal(c.want);
      });
    }

    const never: ClassProblem = { storageClassName: 'ceph', reason: 'PoolNeverChosen', message: 'pool b is never chosen' };
    const gap: ClassProblem = { storageClassName: 'ceph', reason: 'NoPoolForDomain', message: 'no pool serves zone=z9' };
    it('PoolsCoverDomains: a pool never chosen is no uncovered domain', function () {
      expect(loopConditions({ ...base, problems: [never] })[1]).to.include({ status: 'True', reason: 'AllDomainsServed' });
      expect(loopConditions({ ...base, problems: [never, gap] })[1]).to.include({ status: 'False', reason: 'NoPoolForDomain', message: 'ceph: no pool serves zone=z9' });
    });

    it('two problems of one class are two problems (each its own Warning)', function () {
      const ids = loopProblems(DRIVER, [never, gap], () => undefined, []).map((p) => p.id);
      expect(new Set(ids).size).to.equal(2);
    });
  });
});
