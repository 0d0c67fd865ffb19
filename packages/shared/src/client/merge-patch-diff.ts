/**
 * The RFC 7386 JSON merge patch that turns `from` into `to`: objects are compared key by key,
 * a key `to` lacks becomes null (removed), anything else that differs is sent whole (arrays
 * included, as a merge patch replaces them). Equal values are left out, so fields neither side
 * mentions, such as those a cache projection dropped, stay as the server has them. Undefined
 * counts as absent, as in the JSON that is sent. Undefined when nothing differs.
 */
export function mergePatchDiff(from: unknown, to: unknown): unknown {
  if (!isPlainObject(from) || !isPlainObject(to)) return sameJson(from, to) ? undefined : (to ?? null);
  const patch: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) {
    const a = from[k];
    const b = to[k];
    if (b === undefined) {
      if (a !== undefined) patch[k] = null;
      continue;
    }
    const d = a === undefined ? b : mergePatchDiff(a, b);
    if (d !== undefined) patch[k] = d;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
