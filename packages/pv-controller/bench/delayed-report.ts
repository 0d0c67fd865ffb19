import { machineLine } from '@topovol/testing';
import type { BenchOptions } from './bench-flags.js';
import { f, recordedOptions, writeRecord } from './bench-report.js';
import type { DelayedRun } from './run-delayed.js';

export function formatDelayed(runs: readonly DelayedRun[]): string {
  const rows = runs.map(
    (r) =>
      `${r.contender.padEnd(9)} claims ${r.claims} on ${r.nodes} nodes: ${r.bound} Bound${r.complete ? '' : ' (incomplete)'} in ${f(r.windowSeconds)} s; pre-bind to Bound p50 ${f(r.preBindToBoundMs.p50, 0)} ms, p99 ${f(r.preBindToBoundMs.p99, 0)} ms, max ${f(r.preBindToBoundMs.max, 0)} ms; pod create to scheduled p50 ${f(r.podScheduledMs.p50 / 1000)} s, p99 ${f(r.podScheduledMs.p99 / 1000)} s; binder CPU ${f(r.binder.cpuMsPerBinding, 2)} ms/binding${r.binderEventWrites === undefined ? '' : `, ${r.binderEventWrites} Event writes`}, peak RSS ${f(r.binder.peakRssMiB)} MiB; machine ${f(r.machineBusyFraction * 100, 0)}% busy`,
  );
  const t = runs.find((r) => r.contender === 'topovol');
  const u = runs.find((r) => r.contender === 'upstream');
  if (t && u) {
    rows.push(
      `Topovol/upstream: pre-bind to Bound p50 ${f(t.preBindToBoundMs.p50 / u.preBindToBoundMs.p50, 2)}x, p99 ${f(t.preBindToBoundMs.p99 / u.preBindToBoundMs.p99, 2)}x; pod scheduled p99 ${f(t.podScheduledMs.p99 / u.podScheduledMs.p99, 2)}x; CPU per binding ${f(t.binder.cpuMsPerBinding / u.binder.cpuMsPerBinding, 2)}x${t.binderEventWrites && u.binderEventWrites ? `; Event writes ${f(t.binderEventWrites / u.binderEventWrites, 2)}x` : ''} (<1 is better)`,
    );
  }
  return ['delayed binding behind the real kube-scheduler (pre-bind = the volume\'s claimRef first seen; both ends are the bench\'s watch events)', ...rows].join('\n');
}

export interface DelayedRecord {
  benchmark: 'pv-binder-delayed';
  date: string;
  machine: string;
  options: Omit<BenchOptions, 'help' | 'record'>;
  runs: DelayedRun[];
}

/** Writes results/delayed-binding-<date>.json and results/delayed-binding-latest.json. */
export function recordDelayed(dir: string, runs: readonly DelayedRun[], opts: BenchOptions, now = new Date()): string {
  const record: DelayedRecord = { benchmark: 'pv-binder-delayed', date: now.toISOString(), machine: machineLine(), options: recordedOptions(opts), runs: [...runs] };
  return writeRecord(dir, 'delayed-binding', record, now);
}
