/**
 * Access modes as upstream's binder groups volumes (pkg/controller/volume/persistentvolume/index.go):
 * each volume is filed under the canonical string of its modes, and a claim looks at the groups whose
 * modes contain all of its own, fewest modes first, so a volume with just what the claim asks for is
 * preferred to a more capable one, whatever their sizes.
 */
const CANONICAL: readonly [string, string][] = [
  ['ReadWriteOnce', 'RWO'],
  ['ReadOnlyMany', 'ROX'],
  ['ReadWriteMany', 'RWX'],
  ['ReadWriteOncePod', 'RWOP'],
];

/** "RWO,ROX" style, in upstream's fixed order, duplicates and unknown modes dropped (GetAccessModesAsString). */
export function accessModesKey(modes: readonly string[] | undefined): string {
  const have = new Set(modes ?? []);
  return CANONICAL.filter(([mode]) => have.has(mode))
    .map(([, short]) => short)
    .join(',');
}

function modesOfKey(key: string): Set<string> {
  return new Set(key === '' ? [] : key.split(','));
}

/** Every mode the claim asks for is in the group's modes. */
export function groupServes(groupKey: string, claimKey: string): boolean {
  const group = modesOfKey(groupKey);
  return [...modesOfKey(claimKey)].every((m) => group.has(m));
}

/**
 * The groups (access-mode keys) a claim may take a volume from, in the order they are searched:
 * fewest modes first. Upstream's order among groups of the same size is unspecified (a map); ours is
 * by key, so that results are reproducible.
 */
export function groupsForClaim(groupKeys: Iterable<string>, claimModes: readonly string[] | undefined): string[] {
  const claimKey = accessModesKey(claimModes);
  return [...new Set(groupKeys)]
    .filter((g) => groupServes(g, claimKey))
    .sort((a, b) => modesOfKey(a).size - modesOfKey(b).size || (a < b ? -1 : a > b ? 1 : 0));
}
