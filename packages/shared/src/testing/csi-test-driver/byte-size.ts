const SUFFIX: Record<string, bigint> = {
  '': 1n,
  k: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
  P: 1000n ** 5n,
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  Pi: 1024n ** 5n,
};

/** Whole bytes from an integer Kubernetes-style quantity ("100Gi", "5G", "1024"), exactly. */
export function parseByteSize(q: string): bigint {
  const m = /^(\d+)(|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)$/.exec(q.trim());
  if (!m) throw new Error(`not a byte size: ${JSON.stringify(q)} (want e.g. 100Gi, 5G, 1024)`);
  return BigInt(m[1]!) * SUFFIX[m[2]!]!;
}

export const GiB = 1024n ** 3n;
