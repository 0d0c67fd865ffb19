import { parseQuantity } from '@topovol/shared';

/** The CRD's pattern for quantities (non-negative, as resource.Quantity's grammar without a sign). */
export const QUANTITY_PATTERN = /^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;

export function isQuantity(q: string): boolean {
  return QUANTITY_PATTERN.test(q);
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
 * Whole bytes of a quantity: exact for integer quantities (what CSI capacities are), rounded up for
 * the rest (fractions, exponents), as resource.Quantity.Value() rounds. Undefined for garbage.
 */
export function quantityBytes(q: string | number | undefined): bigint | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return Number.isFinite(q) ? BigInt(Math.ceil(q)) : undefined;
  const m = /^\+?(\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(q.trim());
  if (m) return BigInt(m[1]!) * UNITS[m[2] ?? '']!;
  try {
    return BigInt(Math.ceil(parseQuantity(q)));
  } catch {
    return undefined;
  }
}

const BINARY: [string, bigint][] = [
  ['Ei', 1n << 60n],
  ['Pi', 1n << 50n],
  ['Ti', 1n << 40n],
  ['Gi', 1n << 30n],
  ['Mi', 1n << 20n],
  ['Ki', 1n << 10n],
];

/** Bytes as the shortest exact binary-SI quantity ("3Gi", "1536Mi", "1000"). */
export function formatBytes(bytes: bigint): string {
  if (bytes === 0n) return '0';
  for (const [suffix, unit] of BINARY) if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  return bytes.toString();
}
