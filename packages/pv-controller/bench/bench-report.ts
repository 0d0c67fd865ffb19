import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchOptions } from './bench-flags.js';
import type { ContenderResult } from './run-contender.js';

export interface Ratios {
  /** Topovol pairs/s over upstream's: above 1 means Topovol binds faster. */
  throughput: number;
  /** Below 1 means Topovol's slowest claims wait less. */
  p99: number;
  p50: number;
  /** Below 1 means Topovol uses less memory. */
  peakRss: number;
  cpu: number;
}

export function ratios(results: readonly ContenderResult[]): Ratios | undefined {
  const t = results.find((r) => r.contender === 'topovol');
  const u = results.find((r) => r.contender === 'upstream');
  if (!t || !u) return undefined;
  return {
    throughput: t.claims.pairsPerSecond / u.claims.pairsPerSecond,
    p99: t.claims.latencyMs.p99 / u.claims.latencyMs.p99,
    p50: t.claims.latencyMs.p50 / u.claims.latencyMs.p50,
    peakRss: t.binder.peakRssMiB / u.binder.peakRssMiB,
    cpu: t.binder.cpuSeconds / u.binder.cpuSeconds,
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

const f = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

/** The human-readable report: one row per contender, then the ratios and what shaped the run. */
export function formatReport(results: readonly ContenderResult[], opts: BenchOptions): string {
  const rows = [
    ['contender', 'N', 'bound', 'pairs/s', 'p50 ms', 'p99 ms', 'max ms', 'peak RSS MiB', 'CPU s', 'PVs Available s'],
    ...results.map((r) => [
      r.contender,
      String(r.n),
      String(r.bound) + (r.complete ? '' : '!'),
      f(r.claims.pairsPerSecond),
      f(r.claims.latencyMs.p50, 0),
      f(r.claims.latencyMs.p99, 0),
      f(r.claims.latencyMs.max, 0),
      f(r.binder.peakRssMiB),
      f(r.binder.cpuSeconds, 2),
      f(r.volumes.allAvailableSeconds, 1),
    ]),
  ];
  const out = [table(rows), ''];
  const ra = ratios(results);
  if (ra) {
    out.push(
      `Topovol/upstream: throughput ${f(ra.throughput, 2)}x (>1 is faster), p99 ${f(ra.p99, 2)}x, p50 ${f(ra.p50, 2)}x (<1 is lower latency), peak RSS ${f(ra.peakRss, 2)}x, CPU ${f(ra.cpu, 2)}x (<1 is leaner)`,
      '',
    );
  }
  out.push(
    `Both binders: --kube-api-qps=${opts.qps} --kube-api-burst=${opts.burst}; claims over ${opts.namespaces} namespaces, ${opts.concurrency} creates in flight.`,
    'pairs/s = bound claims / (last Bound - first claim create); latency = claim create response -> first watch event with phase Bound;',
    'CPU = binder utime+stime from the first volume create to the last Bound; peak RSS = max(VmHWM, sampled VmRSS) over the process life.',
  );
  for (const r of results) {
    const o = r.others;
    out.push(
      `${r.contender}: ${r.version}; startup ${f(r.startupMs / 1000)} s; claims created in ${f(r.claims.createSeconds)} s; ${r.notes.join('; ')}; log ${r.logDir}`,
      `  same window: kube-apiserver ${f(o.apiserverCpuSeconds)} CPU s, etcd ${f(o.etcdCpuSeconds)}, bench ${f(o.benchCpuSeconds)}; machine ${f(o.machineBusyFraction * 100, 0)}% busy (${f(o.ownBusyFraction * 100, 0)}% from these four)`,
    );
    if (r.claims.boundBeforeCreateResponse > 0) out.push(`  ${r.claims.boundBeforeCreateResponse} claims were seen Bound before their create response was handled (counted as 0 ms)`);
  }
  if (results.some((r) => r.others.machineBusyFraction - r.others.ownBusyFraction > 0.2)) {
    out.push('note: other work used over 20% of the machine during a run; the figures (and the ratios) are noisy, so rerun on a quiet machine.');
  }
  if (results.some((r) => !r.complete)) out.push('!: not every claim was Bound within --timeout; figures cover the bound ones only.');
  return out.join('\n');
}

function machine(): Record<string, unknown> {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryMiB: Math.round(os.totalmem() / 2 ** 20),
    kernel: os.release(),
    node: process.version,
  };
}

/** Writes results/pv-binder-<date>.json and results/pv-binder-latest.json; returns the dated path. */
export function recordResults(dir: string, results: readonly ContenderResult[], opts: BenchOptions, now = new Date()): string {
  mkdirSync(dir, { recursive: true });
  const { help: _help, record: _record, ...options } = opts;
  // Microseconds are noise at these scales; three decimals keep the record readable.
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  const body = JSON.stringify({ benchmark: 'pv-binder', date: now.toISOString(), machine: machine(), options, results, ratios: ratios(results) ?? null }, round, 2) + '\n';
  const stamp = now.toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');
  const dated = path.join(dir, `pv-binder-${stamp}.json`);
  writeFileSync(dated, body);
  writeFileSync(path.join(dir, 'pv-binder-latest.json'), body);
  return dated;
}
