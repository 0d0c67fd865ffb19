const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go time.Duration string ("15s", "1m30s", "500ms", "1.5h", "0") into milliseconds. */
export function parseDuration(s: string): number {
  const str = s.trim();
  if (str === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(str)) {
    throw new Error(`invalid duration "${s}" (examples: 500ms, 15s, 1m30s)`);
  }
  let total = 0;
  for (const m of str.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

/** Formats milliseconds as a Go-style duration ("15s", "1m30s", "500ms"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  let rest = ms / 1000;
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  rest -= m * 60;
  const sec = Number(rest.toFixed(3));
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${sec}s`;
}
