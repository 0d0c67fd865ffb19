import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { recordReport, rollbackRecord } from '../../bench/bench-report.js';
import type { BenchRun } from '../../bench/bench-report.js';
import type { StoryResult } from '../../bench/story.js';

// docs/benchmarks.md's rollback section is rendered from the record these write.
describe('rollback bench record', function () {
  const story = (kind: StoryResult['kind'], run: number, outcome: StoryResult['outcome'], at: StoryResult['at']): StoryResult =>
    ({ kind, run, namespace: `ns-${run}`, outcome, detail: '', at, facts: { failures: 1, rollbacks: 1 } }) as StoryResult;
  const t0 = 1_700_000_000_000;
  const run: BenchRun = {
    date: new Date('2026-11-29T01:00:00Z'),
    machine: '2 CPUs',
    versions: ['kube-apiserver v1.37.2'],
    managerArgs: [],
    commandLines: [],
    stories: [
      story('rollback', 1, 'recovered', { selectedA: t0 - 50, failed: t0, rollback: t0 + 40, claimRecreated: t0 + 1200, recovered: t0 + 3456 }),
      story('rollback', 2, 'not-recovered', { failed: t0, rollback: t0 + 100 }),
      story('twin', 1, 'not-rolled-back', { failed: t0, refused: t0 + 20 }),
    ],
    twinWindowNote: 'watched for 60.1 s',
  };

  it('keeps each step in seconds after the failure, and the twin apart', function () {
    const rec = rollbackRecord(run, 'rollback-x.txt');
    expect(rec.runs).to.deep.equal([
      { run: 1, outcome: 'recovered', seconds: { selectedA: -0.05, failed: 0, rollback: 0.04, claimRecreated: 1.2, recovered: 3.456 } },
      { run: 2, outcome: 'not-recovered', seconds: { failed: 0, rollback: 0.1 } },
    ]);
    expect(rec.twin).to.deep.equal({ outcome: 'not-rolled-back', refusedSeconds: 0.02, watched: 'watched for 60.1 s' });
    expect(rec.report).to.equal('rollback-x.txt');
  });

  it('recordReport writes the text report and rollback-latest.json naming it', function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollback-record-'));
    try {
      const file = recordReport(dir, 'the report', run);
      expect(readFileSync(file, 'utf8')).to.equal('the report\n');
      const latest = JSON.parse(readFileSync(path.join(dir, 'rollback-latest.json'), 'utf8')) as { benchmark: string; report: string };
      expect(latest.benchmark).to.equal('rollback');
      expect(latest.report).to.equal(path.basename(file));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a run without the twin, or with a story that did not play out, never replaces rollback-latest.json', function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollback-record-'));
    try {
      const noTwin: BenchRun = { ...run, stories: run.stories.filter((s) => s.kind !== 'twin') };
      const broken: BenchRun = { ...run, stories: [...run.stories, story('rollback', 3, 'no-story', {})] };
      for (const r of [noTwin, broken]) {
        recordReport(dir, 'text', r);
        expect(existsSync(path.join(dir, 'rollback-latest.json'))).to.equal(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
