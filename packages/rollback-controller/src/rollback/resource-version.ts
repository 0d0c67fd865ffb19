/** A decimal integer without leading zeros (0 itself allowed). */
const COMPARABLE = /^(0|[1-9][0-9]*)$/;

/**
 * The order of two resourceVersions of the same resource: negative when `a` is older, 0 when
 * equal, positive when newer; undefined when either is not a decimal integer without leading
 * zeros, which the caller must treat as "cannot tell". KEP-5504 (Comparable Resource Version,
 * stable in Kubernetes v1.35) makes them comparable this way: by length, then lexicographically,
 * as strings, so that values beyond Number.MAX_SAFE_INTEGER compare correctly too.
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!COMPARABLE.test(a) || !COMPARABLE.test(b)) return undefined;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
