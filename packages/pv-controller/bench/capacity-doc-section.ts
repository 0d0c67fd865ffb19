// The capacity section of docs/benchmarks.md (target 6), rendered from the records that
// hack/bench/capacity.sh writes: capacity-per-node-<pools>-latest.json, one per pool layout. Only the
// fields read here are declared; the full shape is CapacityBenchRecord in
// packages/capacity-controller/bench/bench-record.ts.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const POOL_LAYOUTS = ['per-class', 'shared'] as const;
export type PoolLayoutName = (typeof POOL_LAYOUTS)[number];

export interface CapacityDocRecord {
  benchmark: 'capacity-per-node';
  date: string;
  machine: string;
  versions: string[];
  report: string;
  options: { nodes: number; classes: number; changes: number; pollIntervalMs: number; quietMs: number; pools: string };
  runs: { contender: string; changes: Record<string, { changes: number; seen: number; maxMs: number | null }>; atRest?: { getCapacity: { perItemPerPoll: number | null } } | null }[];
  summary: { key: string; label: string; cells: Partial<Record<'topovol' | 'upstream', string>>; ratio: number | null; ratioNote?: string }[];
}

/** The latest record of each pool layout present in `dir`. */
export function readCapacityRecords(dir: string): CapacityDocRecord[] {
  const out: CapacityDocRecord[] = [];
  for (const pools of POOL_LAYOUTS) {
    const file = path.join(dir, `capacity-per-node-${pools}-latest.json`);
    if (!existsSync(file)) continue;
    const rec = JSON.parse(readFileSync(file, 'utf8')) as CapacityDocRecord;
    if (rec.benchmark !== 'capacity-per-node' || !Array.isArray(rec.summary)) throw new Error(`${path.basename(file)} is not a capacity bench record; run hack/bench/capacity.sh again`);
    out.push(rec);
  }
  return out;
}

const ratioCell = (r: CapacityDocRecord['summary'][number]): string =>
  r.ratio !== null ? `${r.ratio < 0.01 ? String(r.ratio) : r.ratio.toFixed(2)}x` : r.ratioNote ? `∞ (${r.ratioNote})` : '';

const POOL_WORDS: Record<string, string> = {
  'per-class': 'each class has its own pool on every node',
  shared: 'the classes of a node share one pool, so a volume of one class changes every class of its node',
};

function table(rec: Pick<CapacityDocRecord, 'summary'>): string {
  const rows = rec.summary.map((r) => `| ${r.label} | ${r.cells.topovol ?? ''} | ${r.cells.upstream ?? ''} | ${ratioCell(r)} |`);
  return `| | Topovol | external-provisioner | Topovol / external-provisioner |
| --- | --- | --- | --- |
${rows.join('\n')}`;
}

/** Every timed change seen, and within 2 s? */
function verdict(changes: readonly { changes: number; seen: number; maxMs: number | null }[]): string {
  const seen = changes.reduce((a, c) => a + c.seen, 0);
  const total = changes.reduce((a, c) => a + c.changes, 0);
  const worst = Math.max(0, ...changes.map((c) => c.maxMs ?? Infinity));
  return total === 0 ? 'no change was timed' : seen < total ? `${total - seen} of ${total} changes never showed (target missed)` : worst < 2000 ? `all ${total} within 2 s (target met; slowest ${(worst / 1000).toFixed(2)} s)` : `slowest ${(worst / 1000).toFixed(2)} s (target of 2 s missed)`;
}

/** Where a record stands against target 6: every change within 2 s, no redundant GetCapacity calls. */
function standing(rec: CapacityDocRecord): string {
  const cell = (key: string): string => rec.summary.find((r) => r.key === key)?.cells.topovol ?? 'not measured';
  const changes = Object.values(rec.runs.find((r) => r.contender === 'topovol')?.changes ?? {});
  const perPoll = rec.runs.find((r) => r.contender === 'topovol')?.atRest?.getCapacity.perItemPerPoll;
  // Polls count from each answer, so an item asked once per poll reads slightly above 1.00 over a window.
  const calls = perPoll === undefined || perPoll === null ? 'not measured' : perPoll <= 1.1 ? 'no redundant call (target met)' : 'redundant calls (target missed)';
  return `Where Topovol stands against target 6: changes reach the objects ${verdict(changes)}; GetCapacity at rest
${cell('getCapacityPerItemPerPoll')} calls per item and poll interval, ${calls} (1.00: every item, a node with one set of parameters
and one topology, asked once per poll, none in between).`;
}

/** The fields read here of hack/bench/results/capacity-labels-latest.json (LabelsBenchRecord in packages/capacity-controller/bench/labels-record.ts). */
export interface LabelsDocRecord {
  benchmark: 'capacity-labels';
  date: string;
  versions: string[];
  report: string;
  options: { nodes: number; zones: number; classes: number; moves: number; pollIntervalMs: number };
  runs: { contender: string; moves: Record<string, { changes: number; seen: number; maxMs: number | null }> }[];
  summary: CapacityDocRecord['summary'];
}

export function readLabelsRecord(dir: string): LabelsDocRecord | undefined {
  const file = path.join(dir, 'capacity-labels-latest.json');
  if (!existsSync(file)) return undefined;
  const rec = JSON.parse(readFileSync(file, 'utf8')) as LabelsDocRecord;
  if (rec.benchmark !== 'capacity-labels' || !Array.isArray(rec.summary)) throw new Error('capacity-labels-latest.json is not a labels bench record; run hack/bench/capacity-labels.sh again');
  return rec;
}

/** Where a labels record stands against target 6: every label change within 2 s, one GetCapacity call per new segment and request. */
function labelsStanding(rec: LabelsDocRecord): string {
  const moves = Object.values(rec.runs.find((r) => r.contender === 'topovol')?.moves ?? {});
  const calls = rec.summary.find((r) => r.key === 'getCapacityPerNewSegment')?.cells.topovol;
  const perSegment = Number.parseFloat(calls ?? '');
  // The classes share one pool and ask the same request: one call publishes all of a new zone's objects.
  const callVerdict = Number.isNaN(perSegment) ? 'not measured' : perSegment <= 1 ? 'one call for all its classes, no redundant call (target met)' : `${perSegment.toFixed(2)} calls for one request (target missed)`;
  return `Where Topovol stands against target 6: label changes reach the objects ${verdict(moves)}; a new zone costs GetCapacity ${callVerdict}.`;
}

function labelsPart(rec: LabelsDocRecord): string {
  const o = rec.options;
  return `### Node label changes: ${o.nodes} nodes over ${o.zones} zones × ${o.classes} classes, one publisher for the cluster

\`hack/bench/capacity-labels.sh\`, ${rec.date}: Topovol's capacity loop without \`--capacity-node-name\` against external-provisioner
\`--enable-capacity\` without \`--node-deployment\` (KEP-1472's central deployment: both derive segments from CSINode topology keys
and Node labels), one CSI test driver instance for the cluster, each contender on a fresh control plane. ${o.moves} nodes are each relabelled
into a zone of their own (a new segment) and later back (the segment goes); latency runs from the label write to the bench's watch
seeing every class's object of that zone (or none left). The full report: [${rec.report}](../hack/bench/results/${rec.report}).
Versions: ${rec.versions.join('; ')}.

${table(rec)}

${labelsStanding(rec)}
`;
}

export function capacitySection(records: readonly CapacityDocRecord[], labels?: LabelsDocRecord): string {
  if (records.length === 0 && !labels) return '';
  const parts = records.map(
    (rec) => `### ${rec.options.pools} pools: ${rec.options.nodes} nodes × ${rec.options.classes} classes

\`hack/bench/capacity.sh --pools ${rec.options.pools}\`, ${rec.date} (${POOL_WORDS[rec.options.pools] ?? rec.options.pools}); the full report, with
each change and each request at rest: [${rec.report}](../hack/bench/results/${rec.report}). Versions: ${rec.versions.join('; ')}.

${table(rec)}

${standing(rec)}
`,
  );
  return `## Capacity (target 6)

Per node: one Topovol capacity instance per node (\`--controllers=capacity --capacity-node-name=<node>\`, KEP-1472's per-node
deployment) against external-provisioner \`--enable-capacity --node-deployment\` per node, both over the project's CSI test driver on each node,
each contender on a fresh control plane, one after the other; poll interval ${(records[0]?.options.pollIntervalMs ?? labels?.options.pollIntervalMs ?? 0) / 1000} s for both. A change's
latency runs from the driver answering GetCapacity with the new figure to the bench's watch seeing every
changed CSIStorageCapacity object of that node; requests and writes at rest come from the API server's audit
log, GetCapacity calls from the drivers. What each row means is in \`hack/bench/README.md\` ("capacity per node").
Topovol's writes at rest are the per-node status heartbeats of its aggregated capacity status
(\`CSIDriverCapacity\`, docs/capacity-status.md), which external-provisioner does not have. A per-node
external-provisioner publishes the fixed segment its driver's NodeGetInfo reported, so node label changes are measured with
one publisher for the cluster (last subsection).

${parts.join('\n')}${labels ? `\n${labelsPart(labels)}` : ''}
![Time from a change to the CSIStorageCapacity objects](benchmarks/capacity-change-latency.png)
`;
}

/** The "not measured yet" line for pool layouts without a record. */
export function capacityMissing(records: readonly CapacityDocRecord[]): string {
  const missing = POOL_LAYOUTS.filter((p) => !records.some((r) => r.options.pools === p));
  return missing.length === 0 ? '' : `- Capacity per node with ${missing.join(' and ')} pools (\`hack/bench/capacity.sh --pools ${missing[0]}\`).\n`;
}
