import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { machineLine } from '@topovol/testing';
import type { BenchOptions } from './bench-flags.js';
import { cpuMsPerBindingByProcess } from './binding-run.js';
import type { BindingRun, Order } from './binding-run.js';
import { CEILING_ROUNDS } from './write-ceiling.js';
import { hasRounds, runMedians } from './run-medians.js';
import type { Spread } from './run-medians.js';

/** Topovol over upstream for one N and order; undefined when either is missing. */
export interface Ratios {
  n: number;
  order: Order;
  /** Above 1: Topovol binds faster. */
  throughput: number;
  /** Below 1: Topovol's first binding comes sooner. */
  firstBound: number;
  /** Below 1: Topovol spends less CPU per binding. */
  cpuPerBinding: number;
  /** Below 1: Topovol's peak resident set is smaller. */
  peakRss: number;
  /** binder-first only; below 1: Topovol's slowest claims wait less. */
  p99?: number;
}

/** From the median of each contender's rounds (one round: that run), so a single draw does not decide a ratio. */
export function ratios(runs: readonly BindingRun[]): Ratios[] {
  const medians = runMedians(runs);
  const out: Ratios[] = [];
  for (const t of medians.filter((m) => m.contender === 'topovol')) {
    const u = medians.find((m) => m.contender === 'upstream' && m.n === t.n && m.order === t.order);
    if (!u) continue;
    out.push({
      n: t.n,
      order: t.order,
      throughput: t.pairsPerSecond.median / u.pairsPerSecond.median,
      firstBound: t.firstBoundSeconds.median / u.firstBoundSeconds.median,
      cpuPerBinding: t.cpuMsPerBinding.median / u.cpuMsPerBinding.median,
      peakRss: t.peakRssMiB.median / u.peakRssMiB.median,
      p99: t.p99Ms && u.p99Ms ? t.p99Ms.median / u.p99Ms.median : undefined,
    });
  }
  return out;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

export const f = (x: number | undefined, digits = 1): string => (x !== undefined && Number.isFinite(x) ? x.toFixed(digits) : '-');

/** The human-readable report: one row per run, then the ratios and what shaped the runs. */
export function formatReport(runs: readonly BindingRun[], opts: BenchOptions): string {
  const rows = [
    ['order', 'contender', 'N', 'bound', 'first s', 'all s', 'pairs/s', 'ceiling pairs/s', 'of ceiling', 'writes/binding', 'CPU s', 'CPU ms/binding', 'peak RSS MiB', 'p50 ms', 'p99 ms'],
    ...runs.map((r) => [
      r.order,
      r.round !== undefined ? `${r.contender} #${r.round}` : r.contender,
      String(r.n),
      String(r.bound) + (r.complete ? '' : '!'),
      f(r.firstBoundSeconds),
      f(r.allBoundSeconds),
      f(r.pairsPerSecond),
      f(r.ceiling.bindingsPerSecond),
      `${f(r.fractionOfCeiling * 100, 0)}%`,
      f(r.writes.perBinding, 2),
      f(r.binder.cpuSeconds),
      f(r.binder.cpuMsPerBinding, 2),
      f(r.binder.peakRssMiB),
      f(r.latencyMs?.p50, 0),
      f(r.latencyMs?.p99, 0),
    ]),
  ];
  const out = [table(rows), ''];
  if (hasRounds(runs)) out.push(formatMedians(runs), '');
  for (const ra of ratios(runs)) {
    out.push(
      `Topovol/upstream, ${ra.order}, N=${ra.n}: throughput ${f(ra.throughput, 2)}x (>1 is faster), first Bound ${f(ra.firstBound, 2)}x, CPU per binding ${f(ra.cpuPerBinding, 2)}x, peak RSS ${f(ra.peakRss, 2)}x${ra.p99 !== undefined ? `, p99 ${f(ra.p99, 2)}x` : ''} (<1 is better)`,
    );
  }
  out.push(
    '',
    `Both binders: --kube-api-qps=${opts.qps} --kube-api-burst=${opts.burst}; claims over ${opts.namespaces} namespaces, ${opts.concurrency} creates in flight.`,
    'binder-first: clock from the first claim create (volumes already Available); objects-first: clock from the binder process start.',
    `ceiling: ${opts.ceilingWrites} JSON merge patches of volumes in ${CEILING_ROUNDS} rounds (the fastest counts), ${opts.concurrency} in flight, on the run's own control plane after the binder stopped; pairs/s at 4 writes per binding.`,
    "writes/binding: updates and patches of volumes and claims in kube-apiserver's apiserver_request_total over the window (the bench only creates).",
  );
  for (const r of runs) {
    out.push(`${r.order} ${r.contender} N=${r.n}: ${r.version}; machine ${f(r.machineBusyFraction * 100, 0)}% busy (${f(r.ownBusyFraction * 100, 0)}% from the binder, kube-apiserver, etcd and the bench); log ${r.logDir}`);
    const c = cpuMsPerBindingByProcess(r);
    if (c) out.push(`  CPU ms per binding: binder ${f(c.binder, 2)}, kube-apiserver ${f(c.apiserver, 2)}, etcd ${f(c.etcd, 2)}, bench ${f(c.bench, 2)}`);
  }
  if (runs.some((r) => r.machineBusyFraction - r.ownBusyFraction > 0.2)) {
    out.push('note: other work used over 20% of the machine during a run; the figures (and the ratios) are noisy, so rerun on a quiet machine.');
  }
  if (runs.some((r) => !r.complete)) out.push('!: not every claim was Bound before --timeout or --stall; figures cover the bound ones only.');
  return out.join('\n');
}

/** The range of the rounds, e.g. "231.7-254.8". */
export function rangeOf(s: Spread, digits = 1, scale = 1, unit = ''): string {
  return `${f(s.min * scale, digits)}-${f(s.max * scale, digits)}${unit}`;
}

/** A median with the range of the rounds, e.g. "243.4 (231.7-254.8)"; one round: the figure alone. */
export function withRange(s: Spread, digits = 1, scale = 1, unit = ''): string {
  const median = `${f(s.median * scale, digits)}${unit}`;
  return s.min === s.max ? median : `${median} (${rangeOf(s, digits, scale, unit)})`;
}

/** "met" or "not met", judged on the figure as printed, so a verdict never contradicts the number beside it. */
export function verdict(shown: string, meets: (value: number) => boolean): string {
  return meets(parseFloat(shown)) ? 'met' : 'not met';
}

/** The medians over --repeat rounds, with each figure's range. */
function formatMedians(runs: readonly BindingRun[]): string {
  const rows = [
    ['order', 'contender', 'N', 'rounds', 'first s', 'pairs/s', 'of ceiling', 'CPU ms/binding', 'peak RSS MiB'],
    ...runMedians(runs).map((m) => [
      m.order,
      m.contender,
      String(m.n),
      String(m.rounds) + (m.complete ? '' : '!'),
      withRange(m.firstBoundSeconds),
      withRange(m.pairsPerSecond),
      withRange(m.fractionOfCeiling, 0, 100, '%'),
      withRange(m.cpuMsPerBinding, 2),
      withRange(m.peakRssMiB),
    ]),
  ];
  return `Median of the rounds (their range):\n${table(rows)}`;
}

/** The record docs/benchmarks.md is written from. */
export interface BindingRecord {
  benchmark: 'pv-binder';
  date: string;
  machine: string;
  options: Omit<BenchOptions, 'help' | 'record'>;
  runs: BindingRun[];
  ratios: Ratios[];
  /** Written by hand when a record joins the runs of two invocations: which run came from where. */
  note?: string;
}

/** The options as recorded: what shaped the run, without the bench's own switches. */
export function recordedOptions(opts: BenchOptions): Omit<BenchOptions, 'help' | 'record'> {
  const { help: _help, record: _record, ...options } = opts;
  return options;
}

/** A number as the record keeps it: three decimals, five below 1. */
export function roundForRecord(v: number): number {
  const scale = Math.abs(v) < 1 ? 100_000 : 1000;
  return Math.round(v * scale) / scale;
}

/** Writes results/<prefix>-<date>.json and results/<prefix>-latest.json; returns the dated path. */
export function writeRecord(dir: string, prefix: string, record: object, now: Date): string {
  mkdirSync(dir, { recursive: true });
  // Microseconds are noise at these scales; three decimals keep the record readable. Fractions keep
  // five, or a run's 81.48% of the ceiling would be stored as 0.815 and printed as 82%.
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? roundForRecord(v) : v);
  const body = JSON.stringify(record, round, 1) + '\n';
  const stamp = now.toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');
  const dated = path.join(dir, `${prefix}-${stamp}.json`);
  writeFileSync(dated, body);
  writeFileSync(path.join(dir, `${prefix}-latest.json`), body);
  return dated;
}

/** Writes results/pv-binder[-pods][-<label>]-<date>.json and its -latest.json; returns the dated path. */
export function recordResults(dir: string, runs: readonly BindingRun[], opts: BenchOptions, now = new Date()): string {
  const record: BindingRecord = { benchmark: 'pv-binder', date: now.toISOString(), machine: machineLine(), options: recordedOptions(opts), runs: [...runs], ratios: ratios(runs) };
  // Runs with pods cached, on split cores, and labelled runs (e.g. one contender at a large N), are
  // records of their own, so they never replace the main one.
  return writeRecord(dir, ['pv-binder', ...(opts.pods ? ['pods'] : []), ...(opts.splitCores ? ['split-cores'] : []), ...(opts.label ? [opts.label] : [])].join('-'), record, now);
}
