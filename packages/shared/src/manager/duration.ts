/**
 * Go `time.Duration` strings, as kube flags take them ("15s", "1m30s", "500ms", "1.5h", "0").
 * Durations are carried as milliseconds (a `number`, fractional below 1ms).
 */

/** Nanoseconds per unit, as Go's time.ParseDuration knows them ("µs" as U+00B5 or U+03BC). */
const UNIT_NS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

/** Go's time.Duration is an int64 of nanoseconds (about 292 years). */
const MAX_NS = (1n << 63n) - 1n;
const NS_PER_MS = 1_000_000n;

/** A string that is not a (non-negative) Go duration; `reason` says why, without the input. */
export class DurationError extends Error {
  constructor(
    readonly input: string,
    readonly reason: string,
  ) {
    super(`invalid duration "${input}": ${reason} (examples: 500ms, 15s, 1m30s)`);
    this.name = 'DurationError';
  }
}

/** One `<number><unit>` term: "15s", "1.5h", ".5s", "1.s" (Go accepts the last two too). */
const TERM = /(\d+\.?\d*|\.\d+)([^\d.]*)/y;

/**
 * Parses a Go duration string into milliseconds. Accepts what Go's time.ParseDuration does except
 * negative values: "0", "+15s", "1m30s", "500ms", "1.5s", ".5s", "2h45m", "300us". Throws a DurationError
 * (message `invalid duration "…": <reason> …`) on anything else ("", "15", "1x", "-1s", " 1s").
 * With `allowNegative` (a flag whose negative value means something, as "never"), "-1s" is -1000.
 */
export function parseDuration(s: string, opts: { allowNegative?: boolean } = {}): number {
  const fail = (why: string): DurationError => new DurationError(s, why);
  let str = s;
  const negative = str.startsWith('-');
  if (negative || str.startsWith('+')) str = str.slice(1);
  if (str === '0') return 0;
  if (str === '') throw fail('empty');

  let totalNs = 0n;
  let pos = 0;
  while (pos < str.length) {
    TERM.lastIndex = pos;
    const m = TERM.exec(str);
    if (!m) throw fail('expected a number');
    const [, num = '', unitName = ''] = m;
    if (unitName === '') throw fail('missing unit');
    const unit = UNIT_NS.get(unitName);
    if (unit === undefined) throw fail(`unknown unit "${unitName}"`);
    const [intPart = '', fracPart = ''] = num.split('.');
    totalNs += BigInt(intPart || '0') * unit;
    // Exact: scale the fraction digits by the unit, truncating below 1ns as Go does.
    if (fracPart !== '') totalNs += (BigInt(fracPart) * unit) / 10n ** BigInt(fracPart.length);
    if (totalNs > MAX_NS) throw fail('out of range');
    pos = TERM.lastIndex;
  }
  if (negative && totalNs > 0n && !opts.allowNegative) throw fail('must not be negative');
  const ms = Number(totalNs / NS_PER_MS) + Number(totalNs % NS_PER_MS) / 1e6;
  return negative && totalNs > 0n ? -ms : ms;
}

/** Go's fmtFrac: `v` in units of 10^-prec, printed with trailing zeros (and a bare dot) trimmed. */
function fmtFrac(v: bigint, prec: number): string {
  const scale = 10n ** BigInt(prec);
  const whole = v / scale;
  const frac = (v % scale).toString().padStart(prec, '0').replace(/0+$/, '');
  return frac === '' ? whole.toString() : `${whole.toString()}.${frac}`;
}

/**
 * Formats milliseconds the way Go's Duration.String does: "0s", "500ms", "1.5µs", "15s", "1.5s",
 * "1m30s", "1h0m0s", "-2s". Sub-nanosecond fractions are rounded to the nearest nanosecond.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format duration ${ms}`);
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  if (ns < 0n) ns = -ns;
  if (ns < 1_000n) return `${sign}${ns.toString()}ns`;
  if (ns < 1_000_000n) return `${sign}${fmtFrac(ns, 3)}µs`;
  if (ns < 1_000_000_000n) return `${sign}${fmtFrac(ns, 6)}ms`;
  const h = ns / 3_600_000_000_000n;
  ns %= 3_600_000_000_000n;
  const m = ns / 60_000_000_000n;
  ns %= 60_000_000_000n;
  const sec = `${fmtFrac(ns, 9)}s`;
  if (h > 0n) return `${sign}${h.toString()}h${m.toString()}m${sec}`;
  if (m > 0n) return `${sign}${m.toString()}m${sec}`;
  return `${sign}${sec}`;
}
