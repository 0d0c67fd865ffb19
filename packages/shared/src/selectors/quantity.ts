const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/**
 * A resource.Quantity ("10Gi", "500M", "1.5e3", "100m") as a number. Throws on malformed input so
 * that callers can report it instead of guessing. Exact to 2^53 bytes (8 PiB), enough for ordering.
 */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/.exec(q.trim());
  if (!m) throw new Error(`invalid quantity "${q}"`);
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  return base * (BINARY[suffix] ?? DECIMAL[suffix]!);
}

export function tryParseQuantity(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  try {
    return parseQuantity(q);
  } catch {
    return undefined;
  }
}
