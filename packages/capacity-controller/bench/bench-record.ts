import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { summarize } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { callsPerItemPerPoll, cpuPerMin, LABEL, latencies, median, perMinute, ratioOf, recordStamp, ROWS } from './bench-report.js';
import type { BenchReport } from './bench-report.js';
import type { InstanceStart } from './contenders.js';
import type { UserRequests } from './rest-window.js';
import type { ContenderRun } from './run-contender.js';
import type { ChangeKind } from './volume-changes.js';

/** Bumped whenever a reader of the record would have to change. */
export const RECORD_VERSION = 1;

/** One row of the report's summary table: the cells as printed, and the numbers behind them. */
export interface SummaryRow {
  key: string;
  label: string;
  /** The unit of `values` and of the ratio's operands, when the row has numbers. */
  unit?: string;
  cells: Partial<Record<ContenderName, string>>;
  values: Partial<Record<ContenderName, number | null>>;
  /** Topovol / external-provisioner; null when either is missing or external-provisioner's is 0 (see ratioNote). */
  ratio: number | null;
  ratioNote?: string;
}

export interface LatencyRecord {
  changes: number;
  seen: number;
  p50Ms: number | null;
  p90Ms: number | null;
  maxMs: number | null;
}

export interface RequestsRecord {
  user: string;
  /** publisher: the instances that publish capacity (the row's figures); provisioning-only: Topovol's companion external-provisioners. */
  role: 'publisher' | 'provisioning-only';
  writes: number;
  requests: number;
  writesPerMinute: number;
  requestsPerMinute: number;
  /** "verb resource[/subresource]" → count over the window. */
  byRequest: Record<string, number>;
}

export interface RunRecord {
  contender: ContenderName;
  label: string;
  instances: number;
  failure?: string;
  publishedAllMs: number | null;
  starts: { p50Ms: number | null; maxMs: number | null; cpuSecondsMedian: number | null; each: InstanceStart[] };
  changes: Record<ChangeKind, LatencyRecord>;
  changesMachineBusy: number | null;
  atRest: {
    windowMs: number;
    machineBusy: number;
    requests: RequestsRecord[];
    getCapacity: { calls: number; items: number; maxPerItem: number; perMinute: number; perItemPerPoll: number | null };
    cpuMsPerMinutePerInstance: number | null;
    peakRssMiBMedian: number | null;
    /** Topovol's run: the provisioning-only external-provisioners next to each instance. */
    companions?: { count: number; cpuMsPerMinutePerInstance: number | null; peakRssMiBMedian: number | null };
  } | null;
  /** Every timed change; ms from t0 to the watch event, null when not seen. */
  changeList: { kind: ChangeKind; op: 'create' | 'delete'; node: string; cls: string; ms: number | null; error?: string }[];
}

export interface CapacityBenchRecord {
  benchmark: 'capacity-per-node';
  version: number;
  date: string;
  machine: string;
  versions: string[];
  /** The Markdown report of the same run, in the same directory. */
  report: string;
  options: Omit<BenchOptions, 'help' | 'record'>;
  summary: SummaryRow[];
  runs: RunRecord[];
}

const num = (v: number | undefined): number | null => (v === undefined || !Number.isFinite(v) ? null : v);

function latencyRecord(r: ContenderRun, kind: ChangeKind): LatencyRecord {
  const { ms, total } = latencies(r.changes, kind);
  const s = ms.length ? summarize(ms) : undefined;
  return { changes: total, seen: ms.length, p50Ms: num(s?.p50), p90Ms: num(s?.p90), maxMs: num(s?.max) };
}

function requestsRecord(u: UserRequests, r: ContenderRun, windowMs: number): RequestsRecord {
  return {
    user: u.user,
    role: u.user === r.publisherUser ? 'publisher' : 'provisioning-only',
    writes: u.writes,
    requests: u.requests,
    writesPerMinute: perMinute(u.writes, windowMs),
    requestsPerMinute: perMinute(u.requests, windowMs),
    byRequest: Object.fromEntries(Object.entries(u.byVerb).sort(([a], [b]) => (a < b ? -1 : 1))),
  };
}

function runRecord(r: ContenderRun, o: BenchOptions): RunRecord {
  const rest = r.rest;
  const startMs = r.starts.map((s) => s.ms);
  return {
    contender: r.name,
    label: LABEL[r.name],
    instances: r.instances,
    ...(r.failure ? { failure: r.failure } : {}),
    publishedAllMs: num(r.publishedAllMs),
    starts: { p50Ms: num(median(startMs)), maxMs: startMs.length ? Math.max(...startMs) : null, cpuSecondsMedian: num(median(r.starts.map((s) => s.cpuSeconds))), each: r.starts },
    changes: { provisioned: latencyRecord(r, 'provisioned'), outside: latencyRecord(r, 'outside') },
    changesMachineBusy: num(r.changesMachineBusy),
    atRest: rest
      ? {
          windowMs: rest.windowMs,
          machineBusy: rest.machineBusy,
          requests: rest.users.map((u) => requestsRecord(u, r, rest.windowMs)),
          getCapacity: { ...rest.getCapacity, perMinute: perMinute(rest.getCapacity.calls, rest.windowMs), perItemPerPoll: num(callsPerItemPerPoll(r, o.pollIntervalMs)) },
          cpuMsPerMinutePerInstance: num(cpuPerMin(rest.publishers, rest.windowMs)),
          peakRssMiBMedian: num(median(rest.publishers.peakRssMiB)),
          ...(rest.companions.count > 0
            ? { companions: { count: rest.companions.count, cpuMsPerMinutePerInstance: num(cpuPerMin(rest.companions, rest.windowMs)), peakRssMiBMedian: num(median(rest.companions.peakRssMiB)) } }
            : {}),
        }
      : null,
    changeList: r.changes.map((c) => ({ kind: c.kind, op: c.op, node: c.node, cls: c.cls, ms: c.t0 !== undefined && c.seenAt !== undefined ? c.seenAt - c.t0 : null, ...(c.error ? { error: c.error } : {}) })),
  };
}

function summaryRows(runs: readonly ContenderRun[], o: BenchOptions): SummaryRow[] {
  const t = runs.find((r) => r.name === 'topovol');
  const u = runs.find((r) => r.name === 'upstream');
  return ROWS.map((row) => {
    const values = Object.fromEntries(runs.map((r) => [r.name, row.num ? num(row.num(r, o)) : null]));
    const ratio = t && u && row.num ? ratioOf(row.num(t, o), row.num(u, o)) : undefined;
    return {
      key: row.key,
      label: row.label,
      ...(row.unit ? { unit: row.unit } : {}),
      cells: Object.fromEntries(runs.map((r) => [r.name, row.value(r, o)])),
      values,
      ratio: num(ratio),
      ...(ratio === Infinity ? { ratioNote: `${LABEL.upstream} 0` } : {}),
    };
  });
}

export function benchRecord(rep: BenchReport, reportFile: string): CapacityBenchRecord {
  const { help: _help, record: _record, ...options } = rep.opts;
  return {
    benchmark: 'capacity-per-node',
    version: RECORD_VERSION,
    date: rep.date.toISOString(),
    machine: rep.machine,
    versions: rep.versions,
    report: path.basename(reportFile),
    options,
    summary: summaryRows(rep.runs, rep.opts),
    runs: rep.runs.map((r) => runRecord(r, rep.opts)),
  };
}

/**
 * Writes capacity-per-node-<date>.json next to the report and capacity-per-node-<pools>-latest.json
 * (the record a docs generator reads, one per pool layout); returns the dated path.
 */
export function writeBenchRecord(dir: string, record: CapacityBenchRecord, date: Date): string {
  mkdirSync(dir, { recursive: true });
  // Microseconds are noise at these scales; three decimals keep the record readable.
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  const body = `${JSON.stringify(record, round, 1)}\n`;
  const dated = path.join(dir, `capacity-per-node-${recordStamp(date)}.json`);
  writeFileSync(dated, body);
  writeFileSync(path.join(dir, `capacity-per-node-${record.options.pools}-latest.json`), body);
  return dated;
}
