import { expect } from 'chai';
import {
  buildStorageStatus,
  decidePublish,
  expiredPools,
  isPruner,
  CONDITION_MESSAGE_MAX,
  fitConditionMessage,
  mergeConditions,
  perNodeFieldManager,
  planPrune,
  summarizeStatus,
} from '../../src/status/index.js';
import type { CapacityEntry, CSIDriverCapacity, StorageStatus } from '../../src/status/index.js';
import { extractOwned } from '../../src/status/managed-fields.js';
import type { FieldSet } from '../../src/status/managed-fields.js';

const T0 = Date.parse('2026-11-22T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const EXP = iso(T0 + 60_000);

const entry = (over: Partial<CapacityEntry> = {}): CapacityEntry => ({ storageClassName: 'fast', pool: 'p1', capacity: '10Gi', ...over });

// The fieldsV1 the API server records for a per-node writer (keys JSON-escaped as Go does, "<" as \u003c).
const nodeFields = (node: string, cls = '<ephemeral>'): FieldSet => ({
  'f:status': {
    'f:storage': {
      [`k:${JSON.stringify({ storageClassName: cls }).replace(/</g, '\\u003c').replace(/>/g, '\\u003e')}`]: {
        '.': {},
        'f:storageClassName': {},
        'f:pools': {
          [`k:${JSON.stringify({ name: node })}`]: { '.': {}, 'f:name': {}, 'f:nodeList': { [`v:${JSON.stringify(node)}`]: {} }, 'f:capacity': {}, 'f:expiryTime': {} },
        },
      },
    },
  },
});

const pool = (node: string, expiry: number, capacity = '1Gi') => ({ name: node, nodeList: [node], capacity, expiryTime: iso(expiry) });

function object(storage: StorageStatus[], managers: { manager: string; operation?: string; fields: FieldSet }[], rv = '42'): CSIDriverCapacity {
  return {
    apiVersion: 'topovol.io/v1alpha1',
    kind: 'CSIDriverCapacity',
    metadata: {
      name: 'drv',
      resourceVersion: rv,
      generation: 1,
      managedFields: managers.map((m) => ({ manager: m.manager, operation: m.operation ?? 'Apply', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: m.fields })),
    },
    status: { storage },
  };
}

describe('capacity status: buildStorageStatus', function () {
  const cases: { name: string; entries: CapacityEntry[]; classes: string[]; pools: string[][]; rejected: RegExp[] }[] = [
    { name: 'groups by class, sorted, pools sorted', entries: [entry({ storageClassName: 'slow', pool: 'b' }), entry({ pool: 'z' }), entry({ pool: 'a' })], classes: ['fast', 'slow'], pools: [['a', 'z'], ['b']], rejected: [] },
    { name: 'ephemeral and fallback are valid class names', entries: [entry({ storageClassName: '<ephemeral>' }), entry({ storageClassName: '<fallback>' })], classes: ['<ephemeral>', '<fallback>'], pools: [['p1'], ['p1']], rejected: [] },
    { name: 'both nodeTopology and nodeList rejected', entries: [entry({ nodeTopology: { matchLabels: { z: 'a' } }, nodeList: ['n1'] })], classes: [], pools: [], rejected: [/not both/] },
    { name: 'bad quantity rejected, good one kept', entries: [entry({ capacity: '10 GB' }), entry({ pool: 'p2', maximumVolumeSize: '-1Gi' }), entry({ pool: 'p3' })], classes: ['fast'], pools: [['p3']], rejected: [/capacity/, /maximumVolumeSize/] },
    { name: 'duplicate pool: first wins', entries: [entry({ capacity: '1Gi' }), entry({ capacity: '2Gi' })], classes: ['fast'], pools: [['p1']], rejected: [/duplicate/] },
    { name: 'invalid class name rejected', entries: [entry({ storageClassName: 'Fast' }), entry({ pool: '' })], classes: [], pools: [], rejected: [/storageClassName/, /pool name/] },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const out = buildStorageStatus(c.entries, T0, 60_000);
      expect(out.storage.map((s) => s.storageClassName)).to.deep.equal(c.classes);
      expect(out.storage.map((s) => (s.pools ?? []).map((p) => p.name))).to.deep.equal(c.pools);
      expect(out.rejected.map((r) => r.reason)).to.have.length(c.rejected.length);
      c.rejected.forEach((re, i) => expect(out.rejected[i]!.reason).to.match(re));
      for (const s of out.storage) for (const p of s.pools ?? []) expect(p.expiryTime).to.equal(EXP);
    });
  }
  it('keeps topology, sorts and dedupes nodeList, copies sizes', function () {
    const out = buildStorageStatus([entry({ nodeList: ['n2', 'n1', 'n2'], maximumVolumeSize: '1Gi' }), entry({ pool: 'p2', nodeTopology: { matchLabels: { zone: 'a' } } })], T0, 60_000);
    expect(out.storage[0]!.pools).to.deep.equal([
      { name: 'p1', nodeList: ['n1', 'n2'], capacity: '10Gi', maximumVolumeSize: '1Gi', expiryTime: EXP },
      { name: 'p2', nodeTopology: { matchLabels: { zone: 'a' } }, capacity: '10Gi', expiryTime: EXP },
    ]);
  });
  it('a figure expires expiryMs after it was measured, not after it is published; an expired one is left out', function () {
    const out = buildStorageStatus([entry({ measuredAtMs: T0 - 20_000 }), entry({ pool: 'old', measuredAtMs: T0 - 60_000 }), entry({ pool: 'new' })], T0, 60_000);
    expect(out.storage[0]!.pools!.map((p) => [p.name, p.expiryTime])).to.deep.equal([
      ['new', EXP],
      ['p1', iso(T0 + 40_000)],
    ]);
    expect(out.expired.map((e) => e.pool)).to.deep.equal(['old']);
  });
  it('keeps DoesNotExist expressions of a segment that excludes deeper nodes', function () {
    const nodeTopology = { matchLabels: { region: 'r1' }, matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' as const }] };
    const out = buildStorageStatus([entry({ nodeTopology })], T0, 60_000);
    expect(out.storage[0]!.pools![0]!.nodeTopology).to.deep.equal(nodeTopology);
  });
});

describe('capacity status: summarizeStatus', function () {
  const cases: { name: string; storage: StorageStatus[]; want: { classCount: number; poolCount: number; totalCapacity?: string } }[] = [
    { name: 'empty', storage: [], want: { classCount: 0, poolCount: 0 } },
    { name: 'sums pools of one class', storage: [{ storageClassName: '<ephemeral>', pools: [pool('n1', T0 + 1000, '1Gi'), pool('n2', T0 + 1000, '512Mi')] }], want: { classCount: 1, poolCount: 2, totalCapacity: '1536Mi' } },
    {
      name: 'largest class sum, not a sum over classes',
      storage: [
        { storageClassName: 'a', pools: [pool('n1', T0 + 1000, '3Gi')] },
        { storageClassName: 'b', pools: [pool('n1', T0 + 1000, '1Gi'), pool('n2', T0 + 1000, '1Gi')] },
      ],
      want: { classCount: 2, poolCount: 3, totalCapacity: '3Gi' },
    },
    { name: 'expired pools and emptied classes are not counted', storage: [{ storageClassName: 'a', pools: [pool('n1', T0 - 1, '3Gi')] }, { storageClassName: 'b', pools: [pool('n1', T0 + 1000, '1000')] }], want: { classCount: 1, poolCount: 1, totalCapacity: '1000' } },
    { name: 'decimal and fractional quantities', storage: [{ storageClassName: 'a', pools: [pool('n1', T0 + 1000, '1k'), pool('n2', T0 + 1000, '1.5Ki')] }], want: { classCount: 1, poolCount: 2, totalCapacity: '2536' } },
  ];
  for (const c of cases) it(c.name, () => expect(summarizeStatus({ storage: c.storage }, T0)).to.deep.equal(c.want));
});

describe('capacity status: mergeConditions', function () {
  const old = [{ type: 'Ready', status: 'True' as const, lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'A', message: 'a', observedGeneration: 1 }];
  it('keeps lastTransitionTime while the status is unchanged (reason/message may change)', function () {
    const out = mergeConditions([{ type: 'Ready', status: 'True', reason: 'B', message: 'b' }], old, 2, 'NOW');
    expect(out).to.deep.equal([{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'B', message: 'b', observedGeneration: 2 }]);
  });
  it("cuts a message longer than metav1.Condition's limit (the API server would refuse the head's whole write), saying how much", function () {
    const long = 'x'.repeat(40_000);
    const [c] = mergeConditions([{ type: 'PoolsCoverDomains', status: 'False', reason: 'NoPoolForDomain', message: long }], undefined, 1, '2026-11-27T00:00:00Z');
    expect(c!.message.length).to.be.within(CONDITION_MESSAGE_MAX - 8, CONDITION_MESSAGE_MAX);
    expect(c!.message).to.match(/… \(\d+ more characters\)$/);
    expect(fitConditionMessage('short')).to.equal('short');
  });
  it('sets now when the status changes or the condition is new; sorted by type', function () {
    const out = mergeConditions([{ type: 'Ready', status: 'False', reason: 'C', message: '' }, { type: 'PoolMissing', status: 'True', reason: 'D', message: '' }], old, 1, 'NOW');
    expect(out.map((c) => [c.type, c.lastTransitionTime])).to.deep.equal([['PoolMissing', 'NOW'], ['Ready', 'NOW']]);
  });
});

describe('capacity status: extractOwned (a manager\'s applied configuration from managedFields)', function () {
  it('takes only the owned list-map items, set values and leaves', function () {
    const status = { storage: [{ storageClassName: '<ephemeral>', pools: [pool('n1', T0), pool('n2', T0)] }], poolCount: 2 };
    const out = extractOwned(status, nodeFields('n2')['f:status']);
    expect(out).to.deep.equal({ storage: [{ storageClassName: '<ephemeral>', pools: [pool('n2', T0)] }] });
  });
  it('an atomic field (no children) is taken whole', function () {
    const v = { pools: [{ name: 'p', nodeTopology: { matchLabels: { a: 'b' } } }] };
    expect(extractOwned(v, { 'f:pools': { 'k:{"name":"p"}': { 'f:nodeTopology': {} } } })).to.deep.equal({ pools: [{ nodeTopology: { matchLabels: { a: 'b' } } }] });
  });
});

describe('capacity status: decidePublish', function () {
  const desiredAt = (nowMs: number, capacity = '1Gi'): StorageStatus[] => [{ storageClassName: '<ephemeral>', pools: [pool('n1', nowMs + 60_000, capacity)] }];
  const live = (expiry: number, capacity = '1Gi', manager = 'topovol-capacity/n1') =>
    object([{ storageClassName: '<ephemeral>', pools: [pool('n1', expiry, capacity)] }], [{ manager, fields: nodeFields('n1') }]);
  const cases: { name: string; live: CSIDriverCapacity; nowMs: number; capacity?: string; want: string }[] = [
    { name: 'unchanged and fresh: no write', live: live(T0 + 60_000), nowMs: T0 + 10_000, want: 'none' },
    { name: 'unchanged, expiry within half of expiryMs: refresh', live: live(T0 + 60_000), nowMs: T0 + 31_000, want: 'refresh' },
    { name: 'capacity changed: write', live: live(T0 + 60_000), nowMs: T0, capacity: '2Gi', want: 'changed' },
    { name: 'entry owned by someone else (taken over): write', live: live(T0 + 60_000, '1Gi', 'kubectl-edit'), nowMs: T0, want: 'changed' },
    { name: 'object without any entry (e.g. recreated): write', live: object([], []), nowMs: T0, want: 'changed' },
    { name: 'owned expiry a year ahead (written while the clock ran ahead): brought back', live: live(T0 + 365 * 86_400_000), nowMs: T0, want: 'refresh' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const d = decidePublish({ live: c.live, fieldManager: 'topovol-capacity/n1', desired: { storage: desiredAt(c.nowMs, c.capacity), conditions: [] }, nowMs: c.nowMs, expiryMs: 60_000 });
      expect(d.write ? d.reason : 'none').to.equal(c.want);
    });
  }
  it('a figure the driver did not confirm again (same expiry as on the server) is not renewed, however close its expiry', function () {
    const stale: StorageStatus[] = [{ storageClassName: '<ephemeral>', pools: [pool('n1', T0 + 60_000)] }];
    const d = decidePublish({ live: live(T0 + 60_000), fieldManager: 'topovol-capacity/n1', desired: { storage: stale, conditions: [] }, nowMs: T0 + 50_000, expiryMs: 60_000 });
    expect(d).to.deep.equal({ write: false });
  });
  it('a pool we own but no longer want: write (it must be released)', function () {
    const d = decidePublish({ live: live(T0 + 60_000), fieldManager: 'topovol-capacity/n1', desired: { storage: [], conditions: [] }, nowMs: T0, expiryMs: 60_000 });
    expect(d).to.deep.equal({ write: true, reason: 'changed' });
  });
});

describe('capacity status: planPrune', function () {
  const twoNodes = object(
    [{ storageClassName: '<ephemeral>', pools: [pool('n1', T0 - 1000), pool('n2', T0 + 60_000)] }],
    [
      { manager: 'topovol-capacity/n1', fields: nodeFields('n1') },
      { manager: 'topovol-capacity/n2', fields: nodeFields('n2') },
    ],
  );
  it('nothing expired: no step', function () {
    expect(planPrune(twoNodes, T0 - 5000)).to.equal(undefined);
  });
  it('an expired per-node pool: apply as its owner a configuration without status, with the resourceVersion precondition', function () {
    const step = planPrune(twoNodes, T0);
    expect(step).to.deep.include({ kind: 'applyAs', manager: 'topovol-capacity/n1', pools: [{ storageClassName: '<ephemeral>', pool: 'n1' }] });
    expect(step?.kind === 'applyAs' && step.config).to.deep.equal({ apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacity', metadata: { name: 'drv', resourceVersion: '42' } });
  });
  it('an owner of several pools keeps its live ones in the re-applied configuration', function () {
    const fields = nodeFields('n1');
    const pools = fields['f:status']!['f:storage']![Object.keys(fields['f:status']!['f:storage']!)[0]!]!['f:pools']!;
    Object.assign(pools, nodeFields('n2')['f:status']!['f:storage']![Object.keys(fields['f:status']!['f:storage']!)[0]!]!['f:pools']);
    const central = object([{ storageClassName: '<ephemeral>', pools: [pool('n1', T0 - 1000), pool('n2', T0 + 60_000)] }], [{ manager: 'central', fields }]);
    const step = planPrune(central, T0);
    expect(step?.kind === 'applyAs' && step.config.status).to.deep.equal({ storage: [{ storageClassName: '<ephemeral>', pools: [pool('n2', T0 + 60_000)] }] });
  });
  it('pools no applier owns: JSON patch removal, highest index first, tested on resourceVersion', function () {
    const obj = object(
      [
        { storageClassName: 'a', pools: [pool('n1', T0 - 1000), pool('n2', T0 + 5000), pool('n3', T0 - 1000)] },
        { storageClassName: 'b', pools: [pool('n1', T0 - 1000)] },
      ],
      [{ manager: 'kubectl-edit', operation: 'Update', fields: {} }],
    );
    const step = planPrune(obj, T0);
    expect(step?.kind).to.equal('remove');
    expect(step?.kind === 'remove' && step.patch).to.deep.equal([
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'remove', path: '/status/storage/1/pools/0' },
      { op: 'remove', path: '/status/storage/0/pools/2' },
      { op: 'remove', path: '/status/storage/0/pools/0' },
    ]);
    expect(expiredPools(obj.status, T0)).to.have.length(3);
  });
});

describe('capacity status: per-node helpers', function () {
  const obj = object([{ storageClassName: '<ephemeral>', pools: [pool('a', T0 - 1000), pool('b', T0 + 10_000), pool('c', T0 + 10_000)] }], []);
  const cases: [string, CSIDriverCapacity | undefined, string, boolean][] = [
    ['smallest live pool prunes', obj, 'b', true],
    ['others do not', obj, 'c', false],
    ['an expired smallest does not count', obj, 'a', false],
    ['no object: anyone', undefined, 'z', true],
  ];
  for (const [name, o, node, want] of cases) it(name, () => expect(isPruner(o, '<ephemeral>', node, T0)).to.equal(want));
  it('a smallest pool whose expiry is further ahead than any writer sets (a clock that ran ahead) does not hold the pruning', function () {
    const skewed = object([{ storageClassName: '<ephemeral>', pools: [pool('a', T0 + 365 * 86_400_000), pool('b', T0 + 10_000)] }], []);
    expect(isPruner(skewed, '<ephemeral>', 'b', T0, 60_000)).to.equal(true);
    expect(isPruner(skewed, '<ephemeral>', 'a', T0, 60_000)).to.equal(false);
  });
  it('field manager names stay within 128 characters and distinct', function () {
    expect(perNodeFieldManager('node-1')).to.equal('topovol-capacity/node-1');
    const long1 = perNodeFieldManager('x'.repeat(200) + '1');
    const long2 = perNodeFieldManager('x'.repeat(200) + '2');
    expect(long1.length).to.be.at.most(128);
    expect(long1).to.not.equal(long2);
  });
});
