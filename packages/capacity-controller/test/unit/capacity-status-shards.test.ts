import { expect } from 'chai';
import {
  buildStorageStatus,
  fnv1a32,
  isLiveSummary,
  MAX_STATUS_SHARDS,
  mergeStorage,
  planPrune,
  shardCountProblem,
  shardName,
  shardOf,
  shardSummaryNeedsWrite,
  splitByShard,
  summarizeShard,
  totalsFromShards,
} from '../../src/status/index.js';
import type { CapacityEntry, CSIDriverCapacityShard, ShardSummary, StorageStatus } from '../../src/status/index.js';

const T0 = Date.parse('2026-11-22T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const pool = (name: string, expiry: number | undefined, capacity = '1Gi') => ({ name, capacity, ...(expiry === undefined ? {} : { expiryTime: iso(expiry) }) });
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe('capacity status shards: placement and names', function () {
  it('FNV-1a over UTF-8 bytes, as Go\'s hash/fnv New32a (its test vectors)', function () {
    expect(fnv1a32('')).to.equal(0x811c9dc5);
    expect(fnv1a32('a')).to.equal(0xe40c292c);
    expect(fnv1a32('foobar')).to.equal(0xbf9cf968);
    // Multi-byte characters hash their UTF-8 bytes, not UTF-16 code units.
    expect(fnv1a32('é')).to.equal(Math.imul(Math.imul(0x811c9dc5 ^ 0xc3, 0x01000193) ^ 0xa9, 0x01000193) >>> 0);
  });

  it('a pool\'s shard depends on its name and the count only, and 5,000 node names spread evenly', function () {
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 5_000; i++) counts[shardOf(`worker-${String(i).padStart(5, '0')}`, 64)]!++;
    const mean = 5_000 / 64;
    expect(Math.min(...counts)).to.be.above(mean / 2);
    expect(Math.max(...counts)).to.be.below(mean * 2);
    expect(shardOf('node-1', 64)).to.equal(fnv1a32('node-1') % 64);
    expect(shardOf('node-1', 1)).to.equal(0);
  });

  it('names are <driver>-<index>: valid DNS subdomains of at most 253 characters, one per (driver, index)', function () {
    const longest = `${'a'.repeat(61)}.b`;
    expect(longest).to.have.length(63);
    expect(shardName(longest, MAX_STATUS_SHARDS - 1)).to.match(DNS_SUBDOMAIN).and.have.length.at.most(253);
    expect(shardName('ebs.csi.aws.com', 7)).to.equal('ebs.csi.aws.com-7');
    // The index has no dash, so the last dash splits the name: no two pairs share one.
    const pairs: [string, number][] = [['a', 10], ['a-1', 0], ['a-10', 0], ['a', 1], ['a-1', 10]];
    expect(new Set(pairs.map(([d, i]) => shardName(d, i))).size).to.equal(pairs.length);
  });

  it('shard counts from 1 to the maximum are accepted', function () {
    expect([1, 64, MAX_STATUS_SHARDS].map(shardCountProblem)).to.deep.equal([undefined, undefined, undefined]);
    for (const bad of [0, -1, 1.5, MAX_STATUS_SHARDS + 1, Number.NaN]) expect(shardCountProblem(bad), String(bad)).to.be.a('string');
  });

  it('splitByShard puts every pool in its name\'s shard, keeping classes, losing and duplicating none', function () {
    const entries: CapacityEntry[] = [];
    for (const cls of ['fast', 'slow', '<ephemeral>']) for (let i = 0; i < 200; i++) entries.push({ storageClassName: cls, pool: `zone-${i}`, capacity: '1Gi' });
    const { storage } = buildStorageStatus(entries, T0, 60_000);
    const split = splitByShard(storage, 16);
    const seen: string[] = [];
    for (const [index, part] of split) {
      for (const s of part) {
        for (const p of s.pools ?? []) {
          expect(shardOf(p.name, 16), p.name).to.equal(index);
          seen.push(`${s.storageClassName}/${p.name}`);
        }
      }
    }
    expect(seen.sort()).to.deep.equal(entries.map((e) => `${e.storageClassName}/${e.pool}`).sort());
    // The same pool name of every class lands in the same shard.
    for (const part of split.values()) expect(new Set(part.map((s) => JSON.stringify((s.pools ?? []).map((p) => p.name))))).to.have.length(1);
  });

  it('a reader merges shards and keeps a pool found twice once, with the later expiry (after a shard count change)', function () {
    const a: StorageStatus[] = [{ storageClassName: 'fast', pools: [pool('z1', T0 + 10_000, '1Gi'), pool('z2', T0 + 10_000)] }];
    const b: StorageStatus[] = [{ storageClassName: 'fast', pools: [pool('z1', T0 + 50_000, '2Gi')] }, { storageClassName: '<ephemeral>', pools: [pool('n1', undefined)] }];
    expect(mergeStorage([a, b, undefined])).to.deep.equal([
      { storageClassName: '<ephemeral>', pools: [pool('n1', undefined)] },
      { storageClassName: 'fast', pools: [pool('z1', T0 + 50_000, '2Gi'), pool('z2', T0 + 10_000)] },
    ]);
  });
});

describe('capacity status shards: summaries and totals', function () {
  const storage: StorageStatus[] = [
    { storageClassName: 'fast', pools: [pool('z1', T0 + 10_000, '2Gi'), pool('z2', T0 + 30_000, '512Mi'), pool('z3', T0 - 1, '100Gi')] },
    { storageClassName: 'slow', pools: [pool('z1', T0 - 1)] },
  ];

  it('summarizeShard counts live pools per class, sums their capacity, and expires with the latest of them', function () {
    expect(summarizeShard(3, storage, T0)).to.deep.equal({ shard: 3, classes: [{ storageClassName: 'fast', poolCount: 2, capacity: '2560Mi' }], expiryTime: iso(T0 + 30_000) });
    expect(summarizeShard(3, [{ storageClassName: 'a', pools: [pool('p', undefined)] }], T0)).to.deep.equal({ shard: 3, classes: [{ storageClassName: 'a', poolCount: 1, capacity: '1Gi' }] });
    expect(summarizeShard(3, storage, T0 + 30_000)).to.deep.equal({ shard: 3 });
  });

  it('totals: classes with a live pool anywhere, all live pools, the largest per-class sum; expired entries ignored', function () {
    const shards: ShardSummary[] = [
      { shard: 0, classes: [{ storageClassName: 'fast', poolCount: 2, capacity: '3Gi' }, { storageClassName: '<ephemeral>', poolCount: 1, capacity: '1Gi' }], expiryTime: iso(T0 + 1000) },
      { shard: 1, classes: [{ storageClassName: 'fast', poolCount: 1, capacity: '2Gi' }, { storageClassName: 'slow', poolCount: 4, capacity: '4Gi' }] },
      { shard: 2, classes: [{ storageClassName: 'slow', poolCount: 9, capacity: '90Gi' }], expiryTime: iso(T0) },
    ];
    expect(totalsFromShards(shards, T0)).to.deep.equal({ classCount: 3, poolCount: 8, totalCapacity: '5Gi' });
    expect(totalsFromShards(shards, T0 + 1000)).to.deep.equal({ classCount: 2, poolCount: 5, totalCapacity: '4Gi' });
    expect(totalsFromShards([], T0)).to.deep.equal({ classCount: 0, poolCount: 0 });
    expect(shards.map((s) => isLiveSummary(s, T0))).to.deep.equal([true, true, false]);
  });

  it('a shard\'s entry is rewritten when its counts change or its expiry is due (half of expiryMs) and a later one is known', function () {
    const want = summarizeShard(0, storage, T0);
    const cases: [string, ShardSummary | undefined, ShardSummary, number, boolean][] = [
      ['new entry', undefined, want, T0, true],
      ['unchanged, expiry far', want, want, T0, false],
      ['count changed', { ...want, classes: [{ storageClassName: 'fast', poolCount: 1, capacity: '2Gi' }] }, want, T0, true],
      ['same bytes written differently', { ...want, classes: [{ storageClassName: 'fast', poolCount: 2, capacity: '2.5Gi' }] }, want, T0, false],
      ['expiry within half: refresh', { ...want, expiryTime: iso(T0 + 20_000) }, want, T0, true],
      ['expiry within half, nothing later known', want, want, T0 + 5_000, false],
      ['nothing live any more: release', want, { shard: 0 }, T0, true],
      ['nothing before, nothing now', undefined, { shard: 0 }, T0, false],
    ];
    for (const [name, live, w, now, result] of cases) expect(shardSummaryNeedsWrite(live, w, now, 60_000), name).to.equal(result);
  });

  it('planPrune on a shard applies as the owner with the shard\'s kind and resourceVersion', function () {
    const shard: CSIDriverCapacityShard = {
      metadata: {
        name: 'drv-3',
        resourceVersion: '7',
        managedFields: [
          {
            manager: 'topovol-capacity/n1',
            operation: 'Apply',
            subresource: 'status',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:status': { 'f:storage': { 'k:{"storageClassName":"x"}': { '.': {}, 'f:storageClassName': {}, 'f:pools': { 'k:{"name":"n1"}': { '.': {}, 'f:name': {}, 'f:capacity': {}, 'f:expiryTime': {} } } } } } },
          },
        ],
      },
      status: { storage: [{ storageClassName: 'x', pools: [pool('n1', T0 - 1)] }] },
    };
    const step = planPrune(shard, T0, 'CSIDriverCapacityShard');
    expect(step?.kind === 'applyAs' && [step.manager, step.config]).to.deep.equal(['topovol-capacity/n1', { apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacityShard', metadata: { name: 'drv-3', resourceVersion: '7' } }]);
  });
});
