/** One sample of Prometheus' text exposition format. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(\S+))?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y;
// Go's float syntax, whose ParseFloat (what Prometheus reads with) takes the infinities and NaN in
// any case: prom-client writes NaN as "Nan".
const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf(?:inity)?|nan)$/i;
const TIMESTAMP = /^-?\d+$/;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function sampleValue(v: string, line: string): number {
  if (!VALUE.test(v)) throw new Error(`not a sample value: ${v} in: ${line}`);
  const lower = v.toLowerCase();
  if (lower === 'nan') return NaN;
  if (/^\+?inf/.test(lower)) return Infinity;
  if (lower.startsWith('-inf')) return -Infinity;
  return Number(v);
}

function sampleLabels(body: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < body.length) {
    const at = LABEL.lastIndex;
    const l = LABEL.exec(body);
    if (!l) throw new Error(`unreadable labels at ${at} in: ${line}`);
    if (l[1]! in labels) throw new Error(`label ${l[1]} twice in: ${line}`);
    labels[l[1]!] = unescape(l[2]!);
    // A label not followed by a comma must be the last.
    if (l[3] !== ',' && LABEL.lastIndex < body.length) throw new Error(`unreadable labels at ${LABEL.lastIndex} in: ${line}`);
  }
  return labels;
}

/**
 * The samples of a /metrics body (the text format both kube-controller-manager and prom-client
 * write), comments skipped. Throws on a line it cannot read, so that a format change cannot pass
 * as "no series".
 */
export function parsePrometheusText(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample: ${line}`);
    if (m[4] !== undefined && !TIMESTAMP.test(m[4])) throw new Error(`not a timestamp: ${m[4]} in: ${line}`);
    out.push({ name: m[1]!, labels: sampleLabels(m[2] ?? '', line), value: sampleValue(m[3]!, line) });
  }
  return out;
}
