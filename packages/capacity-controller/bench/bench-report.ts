import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { summarize } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import type { ContenderRun } from './run-contender.js';
import type { ProcessesAtRest, UserRequests } from './rest-window.js';
import type { ChangeKind, ChangeResult } from './volume-changes.js';

export interface BenchReport {
  date: Date;
  machine: string;
  versions: string[];
  opts: BenchOptions;
  runs: ContenderRun[];
}

export const LABEL: Record<ContenderName, string> = { topovol: 'Topovol', upstream: 'external-provisioner' };

export const latencies = (changes: readonly ChangeResult[], kind: ChangeKind): { ms: number[]; total: number } => {
  const of = changes.filter((c) => c.kind === kind);
  return { ms: of.flatMap((c) => (c.t0 !== undefined && c.seenAt !== undefined ? [c.seenAt - c.t0] : [])), total: of.length };
};

function latencyCell(changes: readonly ChangeResult[], kind: ChangeKind): string {
  const { ms, total } = latencies(changes, kind);
  return latencyCellOf(ms, total);
}

/** "p50 / p90 / max s (count)" of the latencies seen among `total` timed changes. */
export function latencyCellOf(ms: readonly number[], total: number): string {
  if (total === 0) return '-';
  if (ms.length === 0) return `none seen of ${total}`;
  const s = summarize(ms);
  const sec = (v: number): string => (v / 1000).toFixed(2);
  return `${sec(s.p50)} / ${sec(s.p90)} / ${sec(s.max)} s${ms.length < total ? ` (${ms.length} of ${total} seen)` : ` (${total})`}`;
}

/** Topovol's figure over external-provisioner's; Infinity when only the latter's is 0. */
export function ratioOf(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b)) return undefined;
  if (b === 0) return a === 0 ? undefined : Infinity;
  return a / b;
}

export function ratioCell(a: number | undefined, b: number | undefined, digits = 2): string {
  if (a !== undefined && b === 0) return a === 0 ? 'both 0' : `∞ (${LABEL.upstream} 0)`;
  const r = ratioOf(a, b);
  if (r === undefined) return '-';
  // Two significant digits below 0.1, so a large advantage does not print as 0.00x.
  return `${r >= 0.1 ? r.toFixed(digits) : r.toPrecision(2)}x`;
}

export const pct = (v: number | undefined): string => (v === undefined ? '-' : `${(v * 100).toFixed(0)}%`);
export const perMinute = (n: number, windowMs: number): number => (n * 60_000) / windowMs;
export const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : summarize(xs).p50);
const user = (r: ContenderRun): UserRequests | undefined => r.rest?.users.find((u) => u.user === r.publisherUser);
export const fixed = (v: number | undefined, digits: number): string => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));

/** GetCapacity calls per item and poll interval at rest: 1 means each item asked once per poll. */
export function callsPerItemPerPoll(r: Pick<ContenderRun, 'rest'>, pollIntervalMs: number): number | undefined {
  const g = r.rest?.getCapacity;
  if (!r.rest || !g || g.items === 0) return undefined;
  return g.calls / g.items / (r.rest.windowMs / pollIntervalMs);
}

export interface Row {
  /** A stable name for machine readers (the JSON record). */
  key: string;
  label: string;
  value: (r: ContenderRun, o: BenchOptions) => string;
  /** The number the ratio is taken of (Topovol / external-provisioner), in the row's unit. */
  num?: (r: ContenderRun, o: BenchOptions) => number | undefined;
  unit?: string;
}

const p50s = (r: ContenderRun, kind: ChangeKind): number | undefined => {
  const ms = latencies(r.changes, kind).ms;
  return ms.length ? summarize(ms).p50 / 1000 : undefined;
};

export const ROWS: Row[] = [
  { key: 'provisioned', label: 'change → object, volume provisioned (p50 / p90 / max)', unit: 's (p50)', value: (r) => latencyCell(r.changes, 'provisioned'), num: (r) => p50s(r, 'provisioned') },
  { key: 'outside', label: 'change → object, volume made outside the provisioner (p50 / p90 / max)', unit: 's (p50)', value: (r) => latencyCell(r.changes, 'outside'), num: (r) => p50s(r, 'outside') },
  { key: 'writesPerMinute', unit: 'per minute', label: 'API writes per minute at rest (all instances)', value: (r) => fixed(r.rest && user(r) ? perMinute(user(r)!.writes, r.rest.windowMs) : undefined, 1), num: (r) => (r.rest && user(r) ? perMinute(user(r)!.writes, r.rest.windowMs) : undefined) },
  { key: 'requestsPerMinute', unit: 'per minute', label: 'API requests per minute at rest (all instances)', value: (r) => fixed(r.rest && user(r) ? perMinute(user(r)!.requests, r.rest.windowMs) : undefined, 1), num: (r) => (r.rest && user(r) ? perMinute(user(r)!.requests, r.rest.windowMs) : undefined) },
  {
    key: 'getCapacityPerItemPerPoll',
    unit: 'calls per item and poll interval',
    label: 'GetCapacity calls at rest per item and poll interval (items)',
    value: (r, o) => (r.rest ? `${fixed(callsPerItemPerPoll(r, o.pollIntervalMs), 2)} (${r.rest.getCapacity.items})` : '-'),
    num: (r, o) => callsPerItemPerPoll(r, o.pollIntervalMs),
  },
  { key: 'cpuMsPerMinute', unit: 'ms per minute', label: 'CPU per instance at rest, ms per minute', value: (r) => fixed(cpuPerMin(r.rest?.publishers, r.rest?.windowMs), 0), num: (r) => cpuPerMin(r.rest?.publishers, r.rest?.windowMs) },
  { key: 'peakRssMiB', unit: 'MiB', label: 'peak RSS per instance, MiB (median)', value: (r) => fixed(r.rest ? median(r.rest.publishers.peakRssMiB) : undefined, 1), num: (r) => (r.rest ? median(r.rest.publishers.peakRssMiB) : undefined) },
  { key: 'machineBusy', label: 'machine busy (all cores): during the changes / at rest', value: (r) => `${pct(r.changesMachineBusy)} / ${pct(r.rest?.machineBusy)}` },
  { key: 'publishedAll', unit: 's', label: 'first capacity instance started → all objects published, s', value: (r) => fixed(r.publishedAllMs !== undefined ? r.publishedAllMs / 1000 : undefined, 1), num: (r) => (r.publishedAllMs !== undefined ? r.publishedAllMs / 1000 : undefined) },
  {
    key: 'instanceStart',
    label: 'one instance: start → its objects published, s (p50 / max)',
    unit: 's (p50)',
    value: (r) => (r.starts.length ? `${(median(r.starts.map((s) => s.ms)) / 1000).toFixed(2)} / ${(Math.max(...r.starts.map((s) => s.ms)) / 1000).toFixed(2)}` : '-'),
    num: (r) => (r.starts.length ? median(r.starts.map((s) => s.ms)) / 1000 : undefined),
  },
  { key: 'startCpuSeconds', unit: 's', label: 'CPU to start one instance, s (median)', value: (r) => fixed(r.starts.length ? median(r.starts.map((s) => s.cpuSeconds)) : undefined, 2), num: (r) => (r.starts.length ? median(r.starts.map((s) => s.cpuSeconds)) : undefined) },
];

export function cpuPerMin(p: ProcessesAtRest | undefined, windowMs: number | undefined): number | undefined {
  return p && windowMs && p.count > 0 ? (p.cpuSeconds * 1000 * 60_000) / windowMs / p.count : undefined;
}

function cpuCell(p: ProcessesAtRest | undefined, windowMs: number | undefined): string {
  return fixed(cpuPerMin(p, windowMs), 0);
}

export function mdTable(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

function summaryTable(runs: readonly ContenderRun[], o: BenchOptions): string[] {
  const t = runs.find((r) => r.name === 'topovol');
  const u = runs.find((r) => r.name === 'upstream');
  const header = ['', ...runs.map((r) => LABEL[r.name]), ...(t && u ? ['Topovol / external-provisioner'] : [])];
  return mdTable(
    header,
    ROWS.map((row) => [row.label, ...runs.map((r) => row.value(r, o)), ...(t && u ? [row.num ? ratioCell(row.num(t, o), row.num(u, o)) : ''] : [])]),
  );
}

export function restSection(r: Pick<ContenderRun, 'name' | 'rest' | 'publisherUser'>): string[] {
  if (!r.rest) return [];
  const out = [`${LABEL[r.name]}, ${(r.rest.windowMs / 60_000).toFixed(1)} min at rest:`, ''];
  for (const u of r.rest.users) {
    const verbs = Object.entries(u.byVerb).sort(([a], [b]) => (a < b ? -1 : 1));
    const role = u.user === r.publisherUser ? 'publishes capacity' : 'provisioning only, not counted above';
    out.push(`- \`${u.user}\` (${role}): ${u.writes} writes, ${u.requests} requests${verbs.length ? `: ${verbs.map(([k, n]) => `${k} ${n}`).join(', ')}` : ''}`);
  }
  const g = r.rest.getCapacity;
  out.push(`- GetCapacity: ${g.calls} calls for ${g.items} items (node, parameters, topology), at most ${g.maxPerItem} for one item, in ${(r.rest.windowMs / 60_000).toFixed(1)} min`);
  const comp = r.rest.companions;
  if (comp.count > 0) {
    out.push(`- the ${comp.count} provisioning-only external-provisioners of this deployment: ${cpuCell(comp, r.rest.windowMs)} ms CPU per minute and ${median(comp.peakRssMiB).toFixed(1)} MiB peak RSS each (median), on top of the row above`);
  }
  return [...out, ''];
}

/** The shortest time between two changes of the same node and class (a create and its delete). */
function closestRepeat(changes: readonly ChangeResult[]): number | undefined {
  let best: number | undefined;
  const last = new Map<string, number>();
  for (const c of changes) {
    if (c.t0 === undefined) continue;
    const k = `${c.kind} ${c.node} ${c.cls}`;
    const prev = last.get(k);
    if (prev !== undefined) best = Math.min(best ?? Infinity, c.t0 - prev);
    last.set(k, c.t0);
  }
  return best;
}

function changesSection(r: ContenderRun): string[] {
  const rows = r.changes.map((c) => [c.kind, c.op, c.node, c.cls, c.t0 !== undefined && c.seenAt !== undefined ? String(c.seenAt - c.t0) : 'not seen', c.error ?? '']);
  const gap = closestRepeat(r.changes);
  return [
    `${LABEL[r.name]}, each change (ms from t0 to the watch event):`,
    '',
    ...mdTable(['kind', 'op', 'node', 'class', 'ms', 'note'], rows),
    '',
    ...(gap !== undefined ? [`Closest two changes of one node and class: ${(gap / 1000).toFixed(1)} s apart.`, ''] : []),
  ];
}

export function formatReport(rep: BenchReport): string {
  const o = rep.opts;
  const objects = o.nodes * o.classes;
  const poll = `${o.pollIntervalMs / 1000} s`;
  const out = [
    `# Per-node capacity: Topovol vs external-provisioner, ${o.nodes} nodes × ${o.classes} classes`,
    '',
    `- date: ${rep.date.toISOString()}`,
    `- machine: ${rep.machine}`,
    `- versions: ${rep.versions.join('; ')}`,
    `- setup: ${o.nodes} nodes, ${o.classes} StorageClasses (WaitForFirstConsumer), ${objects} CSIStorageCapacity objects; one CSI driver instance and one capacity instance per node, on loopback; pools ${o.pools}; each contender on a fresh etcd + kube-apiserver, one after the other`,
    `- both contenders: --capacity-poll-interval=${poll}, every other capacity flag at its default${o.topovolFlags.length ? `; Topovol also ${o.topovolFlags.join(' ')}` : ''}${o.upstreamFlags.length ? `; external-provisioner also ${o.upstreamFlags.join(' ')}` : ''}`,
    `- ${o.changes} changes per kind, each on its own node: a round of creates (a 1Gi volume) starting at random offsets within ${o.spreadMs / 1000} s (seed ${o.seed}), ${o.settleMs / 1000} s rest, a round deleting them again; the first round ${o.settleMs / 1000} s after every object was published`,
    `- at rest: ${(o.quietMs / 60_000).toFixed(1)} min, from ${o.settleMs / 1000} s after the last change`,
    '',
    ...summaryTable(rep.runs, o),
    '',
    't0 is the instant the node\'s CSI driver starts answering GetCapacity with the new figure (CreateVolume or DeleteVolume',
    'for a provisioned volume; for a volume made outside the provisioner, the bench changes the figure and then creates or',
    'deletes the static PV). The end is the bench\'s own watch event after which every CSIStorageCapacity object of that',
    'node whose figure changed shows the new figure. Writes are create/update/patch/delete requests of the contender\'s',
    'ServiceAccount in the API server\'s audit log; requests include reads and watches (a watch counts when it starts).',
    'GetCapacity calls are counted at the drivers over the same window, per item (a node with one set of parameters and',
    'one topology): 1.00 per item and poll interval means every item was asked once per poll and never in between.',
    `Instances are started ${o.startConcurrency} at a time, and each holds its start slot until its own node's objects are`,
    'published (the same gate for both contenders); the start rows count from its process start.',
    'The last column divides Topovol\'s figure by external-provisioner\'s (for the latencies, the p50s): below 1 is',
    'better for Topovol in every row.',
    '',
  ];
  for (const r of rep.runs) if (r.failure) out.push(`**${LABEL[r.name]}: the run stopped early:** ${r.failure.split('\n')[0]!}`, '');
  out.push('## At rest, by request', '', ...rep.runs.flatMap(restSection));
  out.push('## Changes', '', ...rep.runs.flatMap(changesSection));
  out.push('## Command lines (one node of each contender)', '', '```', ...rep.runs.flatMap((r) => r.commandLines.map((l) => l.replace(/\/tmp\/topovol-[A-Za-z0-9-]+/g, '$TMP'))), '```');
  return out.join('\n');
}

/** The date as it appears in the record's file names: 2026-11-24T212653Z. */
export const recordStamp = (date: Date): string => date.toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');

/** Writes hack/bench/results/<prefix>-<date>.md and returns its path. */
export function recordReport(dir: string, text: string, date: Date, prefix = 'capacity-per-node'): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${prefix}-${recordStamp(date)}.md`);
  writeFileSync(file, `${text}\n`);
  return file;
}
