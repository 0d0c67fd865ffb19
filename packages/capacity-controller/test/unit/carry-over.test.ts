import { expect } from 'chai';
import { carryOver } from '../../src/status/carry-over.js';
import type { CSIDriverCapacityShard, StorageStatus } from '../../src/status/index.js';

const NOW = Date.parse('2026-11-27T10:00:00Z');
const later = '2026-11-27T10:05:00Z';
const earlier = '2026-11-27T09:55:00Z';
const EXPIRY = 10 * 60_000;
/** Written while a clock ran a year ahead. */
const farAhead = '2027-11-27T10:00:00Z';

/** A shard whose pools of class `fast` are owned, per manager, as listed (server-side apply's managedFields). */
function shard(pools: { name: string; expiryTime: string; owner: string }[]): CSIDriverCapacityShard {
  const managers = [...new Set(pools.map((p) => p.owner))];
  return {
    apiVersion: 'topovol.io/v1alpha1',
    kind: 'CSIDriverCapacityShard',
    metadata: {
      name: 'd-0',
      managedFields: managers.map((manager) => ({
        manager,
        operation: 'Apply',
        subresource: 'status',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:status': { 'f:storage': { 'k:{"storageClassName":"fast"}': { 'f:pools': Object.fromEntries(pools.filter((p) => p.owner === manager).map((p) => [`k:{"name":"${p.name}"}`, {}])) } } } },
      })),
    },
    spec: { driverName: 'd', shard: 0 },
    status: { storage: [{ storageClassName: 'fast', pools: pools.map((p) => ({ name: p.name, capacity: '1Gi', expiryTime: p.expiryTime })) }] },
  };
}

const names = (s: StorageStatus[]): string[] => s.flatMap((x) => (x.pools ?? []).map((p) => `${x.storageClassName}/${p.name}:${p.capacity}`));

describe('carryOver: pools kept as published until the caller has a figure for them', function () {
  const live = shard([
    { name: 'a', expiryTime: later, owner: 'me' },
    { name: 'b', expiryTime: later, owner: 'me' },
    { name: 'c', expiryTime: earlier, owner: 'me' },
    { name: 'd', expiryTime: later, owner: 'someone-else' },
    { name: 'e', expiryTime: farAhead, owner: 'me' },
  ]);
  const cases: { name: string; storage: StorageStatus[]; keep: (cls: string, pool: string) => boolean; want: string[] }[] = [
    { name: 'nothing measured yet (a restart): every live, owned pool stays', storage: [], keep: () => true, want: ['fast/a:1Gi', 'fast/b:1Gi'] },
    { name: 'a fresh figure wins over the published one', storage: [{ storageClassName: 'fast', pools: [{ name: 'a', capacity: '2Gi' }] }], keep: () => true, want: ['fast/a:2Gi', 'fast/b:1Gi'] },
    { name: 'a pool the caller no longer tracks (keep says no) goes', storage: [], keep: (_c, p) => p !== 'b', want: ['fast/a:1Gi'] },
    { name: 'nothing to keep: as given', storage: [{ storageClassName: 'slow', pools: [{ name: 'x', capacity: '3Gi' }] }], keep: () => false, want: ['slow/x:3Gi'] },
  ];
  for (const c of cases) {
    it(c.name, function () {
      expect(names(carryOver(c.storage, [live, undefined], 'me', c.keep, NOW, EXPIRY))).to.deep.equal(c.want);
    });
  }

  it('keeps the pool\'s own expiry (it lapses when it would have), never an expired pool, one expiring implausibly far ahead, or another manager\'s', function () {
    const out = carryOver([], [live], 'me', () => true, NOW, EXPIRY);
    expect(out[0]!.pools!.map((p) => [p.name, p.expiryTime])).to.deep.equal([
      ['a', later],
      ['b', later],
    ]);
  });
});
