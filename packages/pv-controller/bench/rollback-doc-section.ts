// The rollback section of docs/benchmarks.md, rendered from hack/bench/results/rollback-latest.json,
// which hack/bench/rollback.sh writes. Only the fields read here are declared; the full shape is
// RollbackRecord in packages/rollback-controller/bench/bench-report.ts.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { spread } from './run-medians.js';

type Step = 'rollback' | 'claimRecreated' | 'selectedB' | 'boundOnB' | 'podOnB' | 'volumesOnAGone' | 'recovered';

export interface RollbackDocRecord {
  benchmark: 'rollback';
  date: string;
  machine: string;
  versions: string[];
  managerArgs: string[];
  report: string;
  runs: { run: number; outcome: string; seconds: Partial<Record<Step, number>> }[];
  twin?: { outcome: string; refusedSeconds?: number; rollbackSeconds?: number; watched?: string };
}

export function readRollbackRecord(dir: string): RollbackDocRecord | undefined {
  const file = path.join(dir, 'rollback-latest.json');
  if (!existsSync(file)) return undefined;
  const rec = JSON.parse(readFileSync(file, 'utf8')) as RollbackDocRecord;
  if (rec.benchmark !== 'rollback' || !Array.isArray(rec.runs)) throw new Error('rollback-latest.json is not a rollback bench record; run hack/bench/rollback.sh again');
  return rec;
}

const COLUMNS: [string, Step][] = [
  ['rollback Event', 'rollback'],
  ['claim re-created', 'claimRecreated'],
  ['both selected for b', 'selectedB'],
  ['both Bound on b', 'boundOnB'],
  ['pod on b', 'podOnB'],
  ['node-a volume deleted', 'volumesOnAGone'],
  ['recovered (t1)', 'recovered'],
];

const cell = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(1));

export function rollbackSection(r: RollbackDocRecord | undefined): string {
  if (!r) return '';
  const recovered = r.runs.flatMap((x) => (x.seconds.recovered !== undefined ? [x.seconds.recovered] : []));
  const rows = r.runs.map((x) => `| ${x.run} | ${x.outcome} | ${COLUMNS.map(([, k]) => cell(x.seconds[k])).join(' | ')} |`);
  const t = spread(recovered);
  const summary = recovered.length
    ? `Recovered in ${recovered.length} of ${r.runs.length} runs: t1 − t0 min ${t.min.toFixed(1)} s, median ${t.median.toFixed(1)} s, max ${t.max.toFixed(1)} s.`
    : `Recovered in none of ${r.runs.length} runs.`;
  const tw = r.twin;
  const verdict = (o: string): string => (o === 'not-rolled-back' ? 'not rolled back' : o === 'rolled-back' ? 'ROLLED BACK although node a reported the volume in use: a safety failure' : o === 'no-story' ? 'did not play out (a harness problem)' : o);
  const twin = !tw
    ? 'The safety twin was not run.'
    : `Safety twin (node a reports the first volume in \`status.volumesInUse\` before the failure, as a kubelet that mounted it would): **${verdict(tw.outcome)}**${tw.watched ? ` (${tw.watched})` : ''}${tw.refusedSeconds !== undefined ? `; \`ProvisioningRollbackRefused\` at ${tw.refusedSeconds.toFixed(1)} s` : ''}${tw.rollbackSeconds !== undefined ? `; \`ProvisioningRollback\` at ${tw.rollbackSeconds.toFixed(1)} s` : ''}.`;
  return `## Rollback: kubernetes #94217 end to end

\`hack/bench/rollback.sh\`, ${r.date}, ${r.machine}; ${r.versions.join(', ')}; manager \`--controllers=pv-binder,rollback\`${r.managerArgs.length ? ` ${r.managerArgs.map((a) => `\`${a}\``).join(' ')}` : ' with every loop flag at its default'}. No upstream
contender: upstream has no rollback, and the pod of #94217 stays \`Pending\` for ever. The story, on real
kube-scheduler, kube-controller-manager's PV/PVC protection, an external-provisioner per node and the project's
CSI driver: a pod with two claims is sent to node a, whose published capacity is stale; one volume is provisioned
there, the other fails with \`ResourceExhausted\` (**t0**), and the rollback loop must undo the first so that the pod
runs on node b. Seconds after t0 (the full report: \`hack/bench/results/${r.report}\`; how the story is set up:
\`hack/bench/README.md\`, "rollback"):

| run | outcome | ${COLUMNS.map(([h]) => h).join(' | ')} |
| --- | --- | ${COLUMNS.map(() => '---').join(' | ')} |
${rows.join('\n')}

${summary}${recovered.length ? " Most of what follows the rollback is kube-scheduler's backoff before it retries the pod and its\nPreBind waiting for both claims to bind." : ''}

${twin}
`;
}
