/** One sample of Prometheus' text exposition format. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

// The format spells infinities as Go does; Number() reads neither.
function sampleValue(v: string): number {
  if (v === '+Inf' || v === 'Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

/**
 * The samples of a /metrics body (the text format both kube-controller-manager and prom-client
 * write), comments skipped. Throws on a line it cannot read, so that a format change cannot pass
 * as "no series".
 */
export function parsePrometheusText(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (!l) throw new Error(`unreadable labels at ${at} in: ${line}`);
      labels[l[1]!] = unescape(l[2]!);
    }
    out.push({ name: m[1]!, labels, value: sampleValue(m[3]!) });
  }
  return out;
}
