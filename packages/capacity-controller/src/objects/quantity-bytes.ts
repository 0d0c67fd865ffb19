const SUFFIXES: [string, bigint][] = [
  ['Ei', 1n << 60n],
  ['Pi', 1n << 50n],
  ['Ti', 1n << 40n],
  ['Gi', 1n << 30n],
  ['Mi', 1n << 20n],
  ['Ki', 1n << 10n],
];

/** Bytes as a canonical binary-SI quantity, as resource.NewQuantity(n, BinarySI) prints it. */
export function bytesToQuantity(bytes: bigint): string {
  if (bytes === 0n) return '0';
  for (const [suffix, unit] of SUFFIXES) if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  return bytes.toString();
}

const UNITS: Record<string, bigint> = {
  '': 1n,
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
  k: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
  P: 1000n ** 5n,
  E: 1000n ** 6n,
};

/**
 * Exact bytes of an integer quantity (what capacity objects hold), or undefined for anything else
 * (fractions, exponents, garbage): such a value never equals what we would write, so it is rewritten.
 */
export function quantityToBytes(q: string | undefined): bigint | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(q.trim());
  if (!m) return undefined;
  return BigInt(m[1]!) * UNITS[m[2] ?? '']!;
}
