// The one implementation of Kubernetes resource quantities ("10Gi", "500M", "1.5e3", "100m") in
// Topovol: parsed exactly with bigint, so that sizes beyond 2^53 (a claim of 9223372036854775808
// against a volume of 9223372036854775807, or "1e30") compare as the API server's
// resource.Quantity.Cmp does, never as rounded floats. Grammar and rounding: k8s.io/apimachinery
// pkg/api/resource/quantity.go (ParseQuantity, Value). Surrounding white space is ignored, as its
// UnmarshalJSON ignores it; a sign or "." alone, which ParseQuantity reads as 0, is refused.

const BINARY_SHIFT: Record<string, bigint> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const GRAMMAR = /^([+-]?)(\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;
/**
 * Decimal exponents are clamped to ±1000: far beyond any storage size (10^1000 bytes), small enough
 * that a forged "1e999999999" cannot make bigint arithmetic run for minutes.
 */
const MAX_EXP = 1000;
/** ParseQuantity caps a binary-SI quantity (and only those) at this magnitude ("8Ei" is 2^63 - 1). */
const MAX_BINARY = (1n << 63n) - 1n;

/** sign × num / den, exactly (den a power of ten). */
interface Exact {
  negative: boolean;
  num: bigint;
  den: bigint;
}

function parseExact(q: string): Exact | undefined {
  const m = GRAMMAR.exec(q.trim());
  if (!m) return undefined;
  const [whole = '', frac = ''] = m[2]!.split('.');
  const suffix = m[4] ?? '';
  const exp10 = Math.max(-MAX_EXP, Math.min(MAX_EXP, -frac.length + (m[3] !== undefined ? Number(m[3]) : (DECIMAL_EXP[suffix] ?? 0))));
  const shift = BINARY_SHIFT[suffix];
  const scaled = BigInt(`${whole}${frac}` || '0') << (shift ?? 0n);
  let num = exp10 >= 0 ? scaled * 10n ** BigInt(exp10) : scaled;
  let den = exp10 >= 0 ? 1n : 10n ** BigInt(-exp10);
  if (shift !== undefined && num > MAX_BINARY * den) [num, den] = [MAX_BINARY, 1n];
  return { negative: m[1] === '-', num, den };
}

/**
 * Whole bytes of a quantity, rounded up away from zero as resource.Quantity.Value() rounds ("0.5m"
 * is 1 byte, "-0.5m" is -1), exact at any size; undefined for anything that is not a quantity.
 * Numbers are taken as bytes, rounded the same way.
 */
export function quantityBytes(q: string | number | undefined): bigint | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return Number.isFinite(q) ? BigInt(q < 0 ? Math.floor(q) : Math.ceil(q)) : undefined;
  if (BYTES.has(q)) return BYTES.get(q);
  const x = parseExact(q);
  const bytes = x ? (x.negative ? -1n : 1n) * ((x.num + x.den - 1n) / x.den) : undefined;
  // A cluster has few distinct sizes, and the binder reads one on every volume event and claim
  // decision; the bound keeps forged or generated values from growing the map without end.
  if (BYTES.size >= BYTES_MEMO_MAX) BYTES.clear();
  BYTES.set(q, bytes);
  return bytes;
}

const BYTES = new Map<string, bigint | undefined>();
const BYTES_MEMO_MAX = 4096;

/** Whether the text is a resource.Quantity. */
export function isQuantity(q: string): boolean {
  return GRAMMAR.test(q.trim());
}

/**
 * A quantity as a number, for metrics and messages only (never for comparisons: it is exact only to
 * 2^53). Throws on malformed input so that callers can report it instead of guessing.
 */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const x = parseExact(q);
  if (!x) throw new Error(`invalid quantity "${q}"`);
  const value = Number(x.num) / Number(x.den);
  return x.negative ? -value : value;
}

const BINARY_UNITS: [string, bigint][] = [
  ['Ei', 1n << 60n],
  ['Pi', 1n << 50n],
  ['Ti', 1n << 40n],
  ['Gi', 1n << 30n],
  ['Mi', 1n << 20n],
  ['Ki', 1n << 10n],
];

/**
 * Bytes as the shortest exact binary-SI quantity ("3Gi", "1536Mi"), as
 * resource.NewQuantity(n, BinarySI) prints them, except below 1024, where Go switches to decimal SI
 * ("1k" for 1000) and this prints plain digits ("1000"): the same value, and quantities are
 * compared by value, never as strings. Beyond 2^63 - 1 (sums of capacities) in
 * plain digits, since a binary suffix there would parse back capped.
 */
export function formatBytes(bytes: bigint): string {
  if (bytes === 0n) return '0';
  if (bytes > MAX_BINARY || bytes < -MAX_BINARY) return bytes.toString();
  for (const [suffix, unit] of BINARY_UNITS) if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  return bytes.toString();
}
