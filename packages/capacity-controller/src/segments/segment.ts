/** A topology segment: label key → value, as CSI `Topology.segments` and a node's labels. */
export type Segment = Readonly<Record<string, string>>;

/** A canonical string for a segment (sorted keys), usable as a map key and in work-queue keys. */
export function segmentKey(segment: Segment): string {
  return JSON.stringify(Object.keys(segment).sort().map((k) => [k, segment[k]]));
}

export function parseSegmentKey(key: string): Segment {
  const pairs = JSON.parse(key) as [string, string][];
  return Object.fromEntries(pairs);
}

/** True when every key of `outer` has the same value in `inner`: a node in `inner` is in `outer`. */
export function segmentContains(outer: Segment, inner: Segment): boolean {
  return Object.entries(outer).every(([k, v]) => inner[k] === v);
}

/** Orders by sorted (key, value) pairs; a segment comes before the segments it contains. */
export function compareSegments(a: Segment, b: Segment): number {
  const pa = Object.keys(a).sort().map((k) => [k, a[k]!] as const);
  const pb = Object.keys(b).sort().map((k) => [k, b[k]!] as const);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const [ka, va] = pa[i]!;
    const [kb, vb] = pb[i]!;
    if (ka !== kb) return ka < kb ? -1 : 1;
    if (va !== vb) return va < vb ? -1 : 1;
  }
  return pa.length - pb.length;
}

/** Deduplicated and in a stable order whatever the input order. */
export function uniqueSegments(segments: Iterable<Segment>): Segment[] {
  const byKey = new Map<string, Segment>();
  for (const s of segments) byKey.set(segmentKey(s), s);
  return [...byKey.values()].sort(compareSegments);
}
