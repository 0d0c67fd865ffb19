import { quantityBytes } from '@topovol/shared';

/** Whole bytes from a Kubernetes quantity ("100Gi", "5G", "1024"; "-1" for a driver that misreports). */
export function parseByteSize(q: string): bigint {
  const bytes = quantityBytes(q);
  if (bytes === undefined) throw new Error(`not a byte size: ${JSON.stringify(q)} (want e.g. 100Gi, 5G, 1024)`);
  return bytes;
}

export const GiB = 1024n ** 3n;
