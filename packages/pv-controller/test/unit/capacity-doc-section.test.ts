import { expect } from 'chai';
import { capacityMissing, capacitySection } from '../../bench/capacity-doc-section.js';
import type { CapacityDocRecord, LabelsDocRecord } from '../../bench/capacity-doc-section.js';

function record(pools: string, changes: Record<string, { changes: number; seen: number; maxMs: number | null }>, perItemPerPoll: number | null = 1): CapacityDocRecord {
  return {
    benchmark: 'capacity-per-node',
    date: '2026-11-25T00:00:00.000Z',
    machine: '2 CPUs',
    versions: ['kube-apiserver v1.37.2'],
    report: 'capacity-per-node-x.md',
    options: { nodes: 2, classes: 1, changes: 1, pollIntervalMs: 60_000, quietMs: 60_000, pools },
    runs: [{ contender: 'topovol', changes, atRest: { getCapacity: { perItemPerPoll } } }],
    summary: [{ key: 'getCapacityPerItemPerPoll', label: 'GetCapacity', cells: { topovol: '1.00 (2)', upstream: '1.00 (2)' }, ratio: 1 }],
  };
}

// The verdict on target 6 is computed from the record, never written by hand.
describe('capacity section of docs/benchmarks.md', function () {
  const cases: { name: string; changes: Record<string, { changes: number; seen: number; maxMs: number | null }>; verdict: string }[] = [
    { name: 'every change seen within 2 s', changes: { provisioned: { changes: 2, seen: 2, maxMs: 150 }, outside: { changes: 2, seen: 2, maxMs: 70 } }, verdict: 'all 4 within 2 s (target met; slowest 0.15 s)' },
    { name: 'one change slower than 2 s', changes: { provisioned: { changes: 2, seen: 2, maxMs: 2500 } }, verdict: 'slowest 2.50 s (target of 2 s missed)' },
    { name: 'a change never seen', changes: { provisioned: { changes: 2, seen: 1, maxMs: 100 } }, verdict: '1 of 2 changes never showed (target missed)' },
  ];
  for (const c of cases) {
    it(`states the target from the record: ${c.name}`, function () {
      expect(capacitySection([record('per-class', c.changes)])).to.contain(c.verdict);
    });
  }

  it('says whether GetCapacity was asked more than once per item and poll', function () {
    expect(capacitySection([record('shared', {}, 1.0)])).to.contain('no redundant call (target met)');
    expect(capacitySection([record('shared', {}, 2.99)])).to.contain('redundant calls (target missed)');
    expect(capacitySection([record('shared', {}, null)])).to.contain('not measured');
  });

  it('lists the pool layouts that have no record yet, and none once both are there', function () {
    const one = [record('per-class', {})];
    expect(capacityMissing(one)).to.contain('--pools shared');
    expect(capacityMissing([...one, record('shared', {})])).to.equal('');
    expect(capacitySection([])).to.equal('');
  });
});

describe('node label section of docs/benchmarks.md', function () {
  function labels(maxMs: number | null, calls: string): LabelsDocRecord {
    return {
      benchmark: 'capacity-labels',
      date: '2026-11-26T00:00:00.000Z',
      versions: ['kube-apiserver v1.37.2'],
      report: 'capacity-labels-x.md',
      options: { nodes: 6, zones: 2, classes: 2, moves: 2, pollIntervalMs: 60_000 },
      runs: [{ contender: 'topovol', moves: { move: { changes: 2, seen: 2, maxMs }, back: { changes: 2, seen: 2, maxMs: 10 } } }],
      summary: [{ key: 'getCapacityPerNewSegment', label: 'GetCapacity calls', cells: { topovol: calls, upstream: '2.00 (2 classes)' }, ratio: 0.5 }],
    };
  }

  it('states the target from the record: label changes within 2 s, one GetCapacity call per new zone', function () {
    const text = capacitySection([], labels(20, '1.00 (2 classes)'));
    expect(text).to.contain('label changes reach the objects all 4 within 2 s (target met; slowest 0.02 s)');
    expect(text).to.contain('no redundant call (target met)');
    expect(capacitySection([], labels(2500, '2.00 (2 classes)'))).to.contain('slowest 2.50 s (target of 2 s missed)').and.to.contain('2.00 calls for one request (target missed)');
  });

  it('is part of the capacity section next to the per-node records, with the plot', function () {
    const text = capacitySection([record('per-class', {})], labels(20, '1.00 (2 classes)'));
    expect(text).to.contain('### per-class pools').and.to.contain('### Node label changes').and.to.contain('capacity-change-latency.png');
  });
});
