/**
 * How pool entries are spread over CSIDriverCapacityShard objects (docs/adr/0010): a pool's shard
 * is FNV-1a (32 bit, over the UTF-8 bytes, as Go's hash/fnv New32a) of its name modulo the shard
 * count, so every writer of a driver puts a pool in the same shard without talking to the others,
 * and the same pool of different classes lands in the same shard. Every instance of a driver must
 * use the same count; when it changes, entries at their old place expire and are pruned, and readers
 * dedupe by (class, pool).
 */
export const DEFAULT_STATUS_SHARDS = 64;
/**
 * The head keeps one summary entry per shard, about 80 bytes per class in it, so the count is
 * bounded (config/crd maxItems): 128 shards × 64 classes stay near 650 KB.
 */
export const MAX_STATUS_SHARDS = 128;
/** On the head and every shard: lists a driver's shards without a field selector. */
export const LABEL_CAPACITY_DRIVER = 'capacity.topovol.io/driver';

export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(s, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

/** fnv1a32 as 8 hex digits: the short, stable suffix of names shortened to fit a limit. */
export function fnv1a32Hex(s: string): string {
  return fnv1a32(s).toString(16).padStart(8, '0');
}

export function shardOf(pool: string, shards: number): number {
  return fnv1a32(pool) % shards;
}

/**
 * `<driver>-<index>`: the index has no dash, so the name is unambiguous (the last dash splits it),
 * and a driver name (at most 63 characters, a DNS subdomain as every CSIDriver name) stays a valid
 * DNS subdomain of at most 67 characters with the suffix. The CRD checks the same rule (CEL).
 */
export function shardName(driverName: string, index: number): string {
  return `${driverName}-${index}`;
}

/** Why a shard count is unusable, or undefined. */
export function shardCountProblem(shards: number): string | undefined {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_STATUS_SHARDS) return `must be an integer from 1 to ${MAX_STATUS_SHARDS}`;
  return undefined;
}
