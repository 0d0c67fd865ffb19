import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { summarize } from '@topovol/testing';
import type { ContenderName } from './bench-flags.js';
import { callsPerItemPerPoll, cpuPerMin, fixed, LABEL, latencyCellOf, mdTable, median, perMinute, ratioCell, ratioOf, restSection } from './bench-report.js';
import type { LatencyRecord, SummaryRow } from './bench-record.js';
import type { MoveOp, MoveResult } from './label-moves.js';
import type { LabelsBenchOptions } from './labels-flags.js';
import type { LabelsRun } from './labels-run.js';

export interface LabelsReport {
  date: Date;
  machine: string;
  versions: string[];
  opts: LabelsBenchOptions;
  runs: LabelsRun[];
}

/** What hack/bench/results/capacity-labels-latest.json holds. */
export interface LabelsBenchRecord {
  benchmark: 'capacity-labels';
  version: 1;
  date: string;
  machine: string;
  versions: string[];
  report: string;
  options: Omit<LabelsBenchOptions, 'help' | 'record'>;
  summary: SummaryRow[];
  runs: {
    contender: ContenderName;
    label: string;
    failure?: string;
    moves: Record<MoveOp, LatencyRecord>;
    /** Every move; ms from the label write to the watch event, null when not seen. */
    moveList: { op: MoveOp; node: string; zone: string; ms: number | null; getCapacityCalls?: number; error?: string }[];
  }[];
}

const msOf = (m: MoveResult): number | undefined => (m.t0 !== undefined && m.seenAt !== undefined ? m.seenAt - m.t0 : undefined);
const movesOf = (r: LabelsRun, op: MoveOp): { ms: number[]; total: number } => {
  const of = r.moves.filter((m) => m.op === op);
  return { ms: of.flatMap((m) => (msOf(m) !== undefined ? [msOf(m)!] : [])), total: of.length };
};
const p50s = (r: LabelsRun, op: MoveOp): number | undefined => {
  const { ms } = movesOf(r, op);
  return ms.length ? summarize(ms).p50 / 1000 : undefined;
};
const publisher = (r: LabelsRun) => r.rest?.users.find((u) => u.user === r.publisherUser);
const callsPerSegment = (r: LabelsRun): number | undefined => {
  const seen = r.moves.filter((m) => m.op === 'move' && m.getCapacityCalls !== undefined && m.seenAt !== undefined);
  return seen.length ? seen.reduce((a, m) => a + m.getCapacityCalls!, 0) / seen.length : undefined;
};

interface LabelsRow {
  key: string;
  label: string;
  unit?: string;
  value: (r: LabelsRun, o: LabelsBenchOptions) => string;
  num?: (r: LabelsRun, o: LabelsBenchOptions) => number | undefined;
}

const ROWS: LabelsRow[] = [
  { key: 'move', unit: 's (p50)', label: 'node moved to a new zone → its objects (p50 / p90 / max)', value: (r) => latencyCellOf(movesOf(r, 'move').ms, movesOf(r, 'move').total), num: (r) => p50s(r, 'move') },
  { key: 'back', unit: 's (p50)', label: 'node moved back → the emptied zone\'s objects gone (p50 / p90 / max)', value: (r) => latencyCellOf(movesOf(r, 'back').ms, movesOf(r, 'back').total), num: (r) => p50s(r, 'back') },
  { key: 'getCapacityPerNewSegment', unit: 'calls', label: 'GetCapacity calls until a new zone\'s objects were all there (mean)', value: (r, o) => `${fixed(callsPerSegment(r), 2)} (${o.classes} classes)`, num: (r) => callsPerSegment(r) },
  { key: 'writesPerMinute', unit: 'per minute', label: 'API writes per minute at rest', value: (r) => fixed(r.rest && publisher(r) ? perMinute(publisher(r)!.writes, r.rest.windowMs) : undefined, 1), num: (r) => (r.rest && publisher(r) ? perMinute(publisher(r)!.writes, r.rest.windowMs) : undefined) },
  { key: 'requestsPerMinute', unit: 'per minute', label: 'API requests per minute at rest', value: (r) => fixed(r.rest && publisher(r) ? perMinute(publisher(r)!.requests, r.rest.windowMs) : undefined, 1), num: (r) => (r.rest && publisher(r) ? perMinute(publisher(r)!.requests, r.rest.windowMs) : undefined) },
  {
    key: 'getCapacityPerItemPerPoll',
    unit: 'calls per item and poll interval',
    label: 'GetCapacity calls at rest per item and poll interval (items)',
    value: (r, o) => (r.rest ? `${fixed(callsPerItemPerPoll(r, o.pollIntervalMs), 2)} (${r.rest.getCapacity.items})` : '-'),
    num: (r, o) => callsPerItemPerPoll(r, o.pollIntervalMs),
  },
  { key: 'cpuMsPerMinute', unit: 'ms per minute', label: 'CPU at rest, ms per minute', value: (r) => fixed(cpuPerMin(r.rest?.publishers, r.rest?.windowMs), 0), num: (r) => cpuPerMin(r.rest?.publishers, r.rest?.windowMs) },
  { key: 'peakRssMiB', unit: 'MiB', label: 'peak RSS, MiB', value: (r) => fixed(r.rest ? median(r.rest.publishers.peakRssMiB) : undefined, 1), num: (r) => (r.rest ? median(r.rest.publishers.peakRssMiB) : undefined) },
  { key: 'published', unit: 's', label: 'start → every object published, s', value: (r) => fixed(r.publishedMs !== undefined ? r.publishedMs / 1000 : undefined, 2), num: (r) => (r.publishedMs !== undefined ? r.publishedMs / 1000 : undefined) },
];

const num = (v: number | undefined): number | null => (v === undefined || !Number.isFinite(v) ? null : v);

function latencyRecord(r: LabelsRun, op: MoveOp): LatencyRecord {
  const { ms, total } = movesOf(r, op);
  const s = ms.length ? summarize(ms) : undefined;
  return { changes: total, seen: ms.length, p50Ms: num(s?.p50), p90Ms: num(s?.p90), maxMs: num(s?.max) };
}

export function labelsRecord(rep: LabelsReport, reportFile: string): LabelsBenchRecord {
  const { help: _help, record: _record, ...options } = rep.opts;
  const t = rep.runs.find((r) => r.name === 'topovol');
  const u = rep.runs.find((r) => r.name === 'upstream');
  return {
    benchmark: 'capacity-labels',
    version: 1,
    date: rep.date.toISOString(),
    machine: rep.machine,
    versions: rep.versions,
    report: path.basename(reportFile),
    options,
    summary: ROWS.map((row) => {
      const ratio = t && u && row.num ? ratioOf(row.num(t, rep.opts), row.num(u, rep.opts)) : undefined;
      return {
        key: row.key,
        label: row.label,
        ...(row.unit ? { unit: row.unit } : {}),
        cells: Object.fromEntries(rep.runs.map((r) => [r.name, row.value(r, rep.opts)])),
        values: Object.fromEntries(rep.runs.map((r) => [r.name, row.num ? num(row.num(r, rep.opts)) : null])),
        ratio: num(ratio),
        ...(ratio === Infinity ? { ratioNote: `${LABEL.upstream} 0` } : {}),
      };
    }),
    runs: rep.runs.map((r) => ({
      contender: r.name,
      label: LABEL[r.name],
      ...(r.failure ? { failure: r.failure } : {}),
      moves: { move: latencyRecord(r, 'move'), back: latencyRecord(r, 'back') },
      moveList: r.moves.map((m) => ({ op: m.op, node: m.node, zone: m.zone, ms: num(msOf(m)), ...(m.getCapacityCalls !== undefined ? { getCapacityCalls: m.getCapacityCalls } : {}), ...(m.error ? { error: m.error } : {}) })),
    })),
  };
}

export function formatLabelsReport(rep: LabelsReport): string {
  const o = rep.opts;
  const t = rep.runs.find((r) => r.name === 'topovol');
  const u = rep.runs.find((r) => r.name === 'upstream');
  const header = ['', ...rep.runs.map((r) => LABEL[r.name]), ...(t && u ? ['Topovol / external-provisioner'] : [])];
  const rows = ROWS.map((row) => [row.label, ...rep.runs.map((r) => row.value(r, o)), ...(t && u ? [row.num ? ratioCell(row.num(t, o), row.num(u, o)) : ''] : [])]);
  const out = [
    `# Node label changes (central capacity): Topovol vs external-provisioner, ${o.nodes} nodes over ${o.zones} zones × ${o.classes} classes`,
    '',
    `- date: ${rep.date.toISOString()}`,
    `- machine: ${rep.machine}`,
    `- versions: ${rep.versions.join('; ')}`,
    `- setup: ${o.nodes} Ready nodes round-robin over ${o.zones} zones (the zone label is the driver's only topology key in each CSINode), ${o.classes} WaitForFirstConsumer StorageClasses sharing one pool, one CSI driver instance for the cluster; one capacity publisher per contender, each on a fresh etcd + kube-apiserver, one after the other`,
    `- both: --capacity-poll-interval=${o.pollIntervalMs / 1000}s, every other capacity flag at its default${o.topovolFlags.length ? `; Topovol also ${o.topovolFlags.join(' ')}` : ''}${o.upstreamFlags.length ? `; external-provisioner also ${o.upstreamFlags.join(' ')}` : ''}`,
    `- ${o.moves} moves: each a different node relabelled into a zone of its own at a seeded random offset within ${o.spreadMs / 1000} s (seed ${o.seed}), ${o.settleMs / 1000} s rest, the same nodes relabelled back at new offsets`,
    `- at rest: ${(o.quietMs / 60_000).toFixed(1)} min, from ${o.settleMs / 1000} s after the last move`,
    '',
    ...mdTable(header, rows),
    '',
    'A move\'s t0 is just before the bench sends the Node label patch; its end is the bench\'s own watch event after which',
    'the new zone has an object for every class with the driver\'s figure for it (move), or none left (back). GetCapacity',
    'calls for a new zone are counted at the driver until its objects were all there. At rest as in the per-node bench.',
    '',
  ];
  for (const r of rep.runs) if (r.failure) out.push(`**${LABEL[r.name]}: the run stopped early:** ${r.failure.split('\n')[0]!}`, '');
  out.push('## At rest, by request', '', ...rep.runs.flatMap(restSection));
  out.push('## Moves', '');
  for (const r of rep.runs) {
    out.push(`${LABEL[r.name]}, each move (ms from the label write to the watch event):`, '');
    out.push(...mdTable(['op', 'node', 'zone', 'ms', 'GetCapacity calls', 'note'], r.moves.map((m) => [m.op, m.node, m.zone, msOf(m) !== undefined ? String(msOf(m)) : 'not seen', m.getCapacityCalls !== undefined ? String(m.getCapacityCalls) : '', m.error ?? ''])), '');
  }
  out.push('## Command lines', '', '```', ...rep.runs.flatMap((r) => (r.commandLine ? [r.commandLine.replace(/\/tmp\/topovol-[A-Za-z0-9-]+/g, '$TMP')] : [])), '```');
  return out.join('\n');
}

/** Writes capacity-labels-latest.json (the record the docs generator reads); returns its path. */
export function writeLabelsRecord(dir: string, record: LabelsBenchRecord): string {
  mkdirSync(dir, { recursive: true });
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  const file = path.join(dir, 'capacity-labels-latest.json');
  writeFileSync(file, `${JSON.stringify(record, round, 1)}\n`);
  return file;
}
