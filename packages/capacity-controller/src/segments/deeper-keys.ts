import type { Segment } from './segment.js';
import { segmentKey } from './segment.js';

/**
 * For each segment that a deeper segment overlaps (nodes labelled to different depths: one node
 * with region and zone, another with region only), the keys the deeper ones add. Published with
 * `DoesNotExist` for those keys, the shallower segment's selector no longer matches the deeper
 * nodes, so the scheduler (which accepts a node when any matching CSIStorageCapacity has room,
 * kube-scheduler's volumebinding plugin) cannot use a region's figure for a node in a full zone.
 * Grouped by key set, so the cost is segments × key sets², not segments².
 *
 * With `keysOnNodes` (the label keys of a segment's nodes, by segment key; given in domains mode),
 * a key some node of the shallower segment carries itself is not excluded: the selector would then
 * match none of them and the scheduler would find no capacity there at all. Such a node has a gap
 * in its labels (region and rack without zone); the next domain key, which no node of the segment
 * has, still keeps the deeper nodes out.
 */
export function deeperKeys(segments: readonly Segment[], keysOnNodes: (segmentKey: string) => ReadonlySet<string> | undefined = () => undefined): Map<string, readonly string[]> {
  const groups = new Map<string, { keys: string[]; members: Segment[]; byKey: Set<string> }>();
  for (const s of segments) {
    const keys = Object.keys(s).sort();
    const id = JSON.stringify(keys);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys, members: [], byKey: new Set() }));
    g.members.push(s);
    g.byKey.add(segmentKey(s));
  }
  const found = new Map<string, Set<string>>();
  for (const shallow of groups.values()) {
    for (const deep of groups.values()) {
      if (deep.keys.length <= shallow.keys.length || !shallow.keys.every((k) => deep.keys.includes(k))) continue;
      const extra = deep.keys.filter((k) => !shallow.keys.includes(k));
      for (const t of deep.members) {
        const key = segmentKey(Object.fromEntries(shallow.keys.map((k) => [k, t[k]!])));
        if (!shallow.byKey.has(key)) continue;
        let set = found.get(key);
        if (!set) found.set(key, (set = new Set()));
        const carried = keysOnNodes(key);
        for (const k of extra) if (!carried?.has(k)) set.add(k);
      }
    }
  }
  return new Map([...found].filter(([, set]) => set.size > 0).map(([k, set]) => [k, [...set].sort()]));
}
