// Renders hack/chaos.sh's results (JSON lines from the reliability scenarios, the soak's RSS CSV)
// as Markdown. With --into FILE, replaces the text between FILE's chaos-results markers instead.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const [resultsFile, rssFile, flag, target] = process.argv.slice(2);
const rows = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
const rss = existsSync(rssFile) ? readFileSync(rssFile, 'utf8').trim().split('\n').slice(1).map((l) => l.split(',').map(Number)) : [];

const lines = [];
// CHAOS_RUN_AT (set once by hack/chaos.sh) keeps the results file and the docs' block the same text.
const runAt = process.env.CHAOS_RUN_AT ?? new Date().toISOString().slice(0, 16);
lines.push(`Run of ${runAt}Z on ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}.`, '');
lines.push('| scenario | fault | rate / duration | scale | operations attempted | invariant violations | seconds to converge |');
lines.push('|---|---|---|---|---|---|---|');
for (const r of rows) lines.push(`| ${r.scenario} | ${r.fault} | ${r.intensity} | ${r.scale} | ${r.operations} | ${r.violations} | ${r.convergeSeconds.toFixed(1)} |`);
if (rows.length === 0) lines.push('| (no scenario finished) | | | | | | |');
if (rss.length) {
  const mib = rss.map((r) => r[1]);
  const q = Math.floor(mib.length / 4);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  lines.push('', `Soak: ${Math.round(rss.at(-1)[0] / 60)} min of steady churn (3 new claims a second, about 90 live), manager RSS every 10 s:`, '');
  lines.push(`min ${Math.min(...mib).toFixed(0)} MiB, max ${Math.max(...mib).toFixed(0)} MiB, mean of the second quarter ${mean(mib.slice(q, 2 * q)).toFixed(0)} MiB, of the last quarter ${mean(mib.slice(3 * q)).toFixed(0)} MiB.`, '');
  lines.push('| minute | ' + rss.filter((_, i) => i % 6 === 0).map((r) => (r[0] / 60).toFixed(0)).join(' | ') + ' |');
  lines.push('|---|' + rss.filter((_, i) => i % 6 === 0).map(() => '---').join('|') + '|');
  lines.push('| RSS MiB | ' + rss.filter((_, i) => i % 6 === 0).map((r) => r[1].toFixed(0)).join(' | ') + ' |');
}
const text = lines.join('\n') + '\n';

if (flag === '--into') {
  const doc = readFileSync(target, 'utf8');
  const begin = '<!-- chaos-results:begin -->';
  const end = '<!-- chaos-results:end -->';
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${target} has no ${begin} ... ${end} markers`);
  writeFileSync(target, doc.slice(0, a + begin.length) + '\n' + text + doc.slice(b));
} else {
  process.stdout.write(text);
}
