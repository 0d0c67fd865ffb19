import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { StoryResult } from './story.js';
import type { Milestones } from './story-watch.js';

export interface BenchRun {
  date: Date;
  machine: string;
  versions: string[];
  managerArgs: string[];
  commandLines: string[];
  stories: StoryResult[];
  /** How long the twin was watched past the failure, and why that long. */
  twinWindowNote?: string;
}

/** Seconds of `at` after t0 (the failure), or '-' when the step was never seen. */
function rel(at: number | undefined, t0: number | undefined, digits = 1): string {
  return at === undefined || t0 === undefined ? '-' : ((at - t0) / 1000).toFixed(digits);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** t1 - t0 of the recovered runs, in seconds. */
export function recoverySeconds(stories: readonly StoryResult[]): number[] {
  return stories.filter((s) => s.kind === 'rollback' && s.at.recovered !== undefined && s.at.failed !== undefined).map((s) => (s.at.recovered! - s.at.failed!) / 1000);
}

const STORY = [
  'The story (kubernetes/kubernetes #94217), each run in a fresh namespace and StorageClass (WaitForFirstConsumer,',
  'reclaimPolicy Delete): a pod with two 1Gi claims. Node a published 10Gi free, but only 1Gi is left (changed',
  'outside Kubernetes since the last capacity poll); node b published and has 3Gi. kube-scheduler prefers a (more',
  'free space) and selects it for both claims; the first is provisioned there, the second fails with',
  'ResourceExhausted and external-provisioner removes its selected-node. The first volume now pins the pod to a;',
  "Topovol's rollback loop deletes and recreates its claim, the scheduler picks b, both claims are provisioned and",
  'Bound there, and the node-a volume is deleted by its provisioner (reclaimPolicy Delete).',
];

const COLUMNS: [string, keyof Milestones][] = [
  ['rollback Event', 'rollback'],
  ['claim recreated', 'claimRecreated'],
  ['selected b', 'selectedB'],
  ['Bound on b', 'boundOnB'],
  ['pod on b', 'podOnB'],
  ['a-volume deleted', 'volumesOnAGone'],
  ['recovery t1-t0', 'recovered'],
];

function runsSection(stories: StoryResult[]): string[] {
  const out: string[] = [];
  if (stories.length === 0) return out;
  const rows = [['run', 'on a / failed', ...COLUMNS.map(([h]) => h)]];
  for (const s of stories) rows.push([String(s.run), `${s.facts.provisionedClaim ?? '?'} / ${s.facts.failedClaim ?? '?'}`, ...COLUMNS.map(([, k]) => rel(s.at[k], s.at.failed))]);
  out.push('Seconds after t0, the ProvisioningFailed Event of the claim that did not fit on node a, as the bench\'s watch saw it:', '', table(rows), '');
  const secs = recoverySeconds(stories);
  if (secs.length > 0) {
    out.push(`recovery t1 - t0 over ${secs.length} run(s): min ${Math.min(...secs).toFixed(1)} s, median ${median(secs).toFixed(1)} s, max ${Math.max(...secs).toFixed(1)} s`);
  }
  out.push('t1 = the pod bound to node b, both claims Bound to volumes on b and every node-a volume deleted, all seen at once.');
  for (const s of stories) {
    const lead = `node a selected at ${rel(s.at.selectedA, s.at.failed, 2)} s, first volume on a at ${rel(s.at.provisionedOnA, s.at.failed, 2)} s`;
    const again = s.facts.rollbacks > 1 ? `; ${s.facts.rollbacks} rollbacks (the pod went round again)` : '';
    out.push(`run ${s.run}: ${s.detail}; ${lead}; ${s.facts.failures} ProvisioningFailed${again}; namespace ${s.namespace}`);
  }
  const first = stories.find((s) => s.facts.failedMessage);
  if (first) out.push('', `ProvisioningFailed (run ${first.run}, Event time ${first.facts.failedEventTime ?? '?'}): ${first.facts.failedMessage}`);
  const rb = stories.find((s) => s.facts.rollbackMessage);
  if (rb) out.push(`ProvisioningRollback (run ${rb.run}): ${rb.facts.rollbackMessage}`);
  return out;
}

const VERDICT: Record<StoryResult['outcome'], string> = {
  recovered: 'recovered',
  'not-recovered': 'not recovered',
  'not-rolled-back': 'not rolled back',
  'rolled-back': 'ROLLED BACK',
  'no-story': 'did not play out',
};

function twinSection(twin: StoryResult, note: string | undefined): string[] {
  const t0 = twin.at.failed;
  const out = ['', `Safety twin (the same story, but node a reports the first volume in status.volumesInUse before the failure, as a kubelet that mounted it would): ${VERDICT[twin.outcome]}`];
  out.push(`  ${twin.detail}${note ? ` (${note})` : ''}; namespace ${twin.namespace}`);
  if (twin.outcome === 'no-story') return out;
  out.push(`  seconds after the failure: volume on a ${rel(twin.at.provisionedOnA, t0, 2)}, volumesInUse written ${rel(twin.evidenceAt, t0, 2)}, volume labelled used ${rel(twin.at.markedUsed, t0, 2)}`);
  if (twin.evidenceAt !== undefined && t0 !== undefined && twin.evidenceAt > t0) out.push('  note: the evidence came after the failure this time; the twin still shows whether it was honoured.');
  if (twin.at.refused !== undefined) out.push(`  ProvisioningRollbackRefused at ${rel(twin.at.refused, t0)} s: ${twin.facts.refusedMessage ?? ''}`);
  if (twin.at.rollback !== undefined) out.push(`  ProvisioningRollback at ${rel(twin.at.rollback, t0)} s: ${twin.facts.rollbackMessage ?? ''}`);
  return out;
}

export function formatReport(r: BenchRun): string {
  const measured = r.stories.filter((s) => s.kind === 'rollback');
  const twin = r.stories.find((s) => s.kind === 'twin');
  const out = [
    'Topovol rollback benchmark: kubernetes/kubernetes #94217 end to end',
    `date:     ${r.date.toISOString()}`,
    `machine:  ${r.machine}`,
    `versions: ${r.versions.join('; ')}`,
    `manager:  --controllers=pv-binder,rollback ${r.managerArgs.length ? `plus ${r.managerArgs.join(' ')}` : '(every loop flag at its default)'}`,
    '',
    ...STORY,
    '',
    ...runsSection(measured),
  ];
  if (twin) out.push(...twinSection(twin, r.twinWindowNote));
  const bad = r.stories.filter((s) => s.outcome === 'no-story');
  if (bad.length > 0) out.push('', `HARNESS: ${bad.length} story run(s) did not play out (${bad.map((s) => `${s.kind} ${s.run}: ${s.detail}`).join('; ')}); their figures mean nothing.`);
  out.push('', 'Command lines ($TMP = the bench\'s temp dirs):', ...r.commandLines.map((l) => `  ${l}`));
  return out.join('\n');
}

/**
 * What docs/benchmarks.md reads of a run (hack/bench/results/rollback-latest.json); the text report
 * beside it has every detail. Seconds are after t0, the ProvisioningFailed Event.
 */
export interface RollbackRecord {
  benchmark: 'rollback';
  date: string;
  machine: string;
  versions: string[];
  managerArgs: string[];
  /** The text report's file name, in the same directory. */
  report: string;
  runs: { run: number; outcome: StoryResult['outcome']; seconds: Partial<Record<keyof Milestones, number>> }[];
  twin?: { outcome: StoryResult['outcome']; refusedSeconds?: number; rollbackSeconds?: number; watched?: string };
}

export function rollbackRecord(r: BenchRun, report: string): RollbackRecord {
  const seconds = (s: StoryResult): Partial<Record<keyof Milestones, number>> => {
    const t0 = s.at.failed;
    if (t0 === undefined) return {};
    return Object.fromEntries(Object.entries(s.at).flatMap(([k, v]) => (typeof v === 'number' ? [[k, Math.round(v - t0) / 1000]] : [])));
  };
  const twin = r.stories.find((s) => s.kind === 'twin');
  const twinSeconds = twin ? seconds(twin) : {};
  return {
    benchmark: 'rollback',
    date: r.date.toISOString(),
    machine: r.machine,
    versions: r.versions,
    managerArgs: r.managerArgs,
    report,
    runs: r.stories.filter((s) => s.kind === 'rollback').map((s) => ({ run: s.run, outcome: s.outcome, seconds: seconds(s) })),
    ...(twin
      ? { twin: { outcome: twin.outcome, ...(twinSeconds.refused !== undefined ? { refusedSeconds: twinSeconds.refused } : {}), ...(twinSeconds.rollback !== undefined ? { rollbackSeconds: twinSeconds.rollback } : {}), ...(r.twinWindowNote ? { watched: r.twinWindowNote } : {}) } }
      : {}),
  };
}

/**
 * Whether a run may stand for the bench in docs/benchmarks.md: every story played out and the
 * safety twin ran (a quick look with --twin=false, or a harness failure, is kept as text only).
 */
export function recordsLatest(run: BenchRun): boolean {
  return run.stories.some((s) => s.kind === 'twin') && run.stories.every((s) => s.outcome !== 'no-story');
}

/**
 * Writes hack/bench/results/rollback-<date>.txt, and, when the run may stand for the bench,
 * rollback-latest.json beside it (which docs/benchmarks.md is rendered from); returns the text
 * file's path.
 */
export function recordReport(dir: string, text: string, run: BenchRun): string {
  mkdirSync(dir, { recursive: true });
  const stamp = run.date.toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');
  const file = path.join(dir, `rollback-${stamp}.txt`);
  writeFileSync(file, `${text}\n`);
  if (recordsLatest(run)) writeFileSync(path.join(dir, 'rollback-latest.json'), `${JSON.stringify(rollbackRecord(run, path.basename(file)), null, 2)}\n`);
  return file;
}
