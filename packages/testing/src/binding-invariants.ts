import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';

const key = (ns: string | undefined, name: string | undefined): string => `${ns ?? ''}/${name ?? ''}`;

/**
 * What must hold after any fault, whatever the binder did (the reliability suite checks it after
 * every scenario): no claim Lost; no volume claimed by two Bound claims; every Bound claim's volume
 * exists and points back to it (name and uid); no claim that was Bound before the faults is lost or
 * moved.
 * Returns one line per violation, empty when all hold.
 */
export function bindingViolations(claims: readonly PersistentVolumeClaim[], volumes: readonly PersistentVolume[], boundBefore: ReadonlyMap<string, string> = new Map()): string[] {
  const out: string[] = [];
  const volumeByName = new Map(volumes.map((v) => [v.metadata?.name ?? '', v]));
  const claimOfVolume = new Map<string, string>();
  const claimsByKey = new Map(claims.map((c) => [key(c.metadata?.namespace, c.metadata?.name), c]));
  for (const c of claims) {
    const k = key(c.metadata?.namespace, c.metadata?.name);
    const vn = c.spec?.volumeName;
    // Lost is what the binder reports when a Bound claim's volume went to someone else: data loss.
    if (c.status?.phase === 'Lost') out.push(`claim ${k} is Lost (its volume ${vn ?? '-'} was bound elsewhere or deleted)`);
    if (c.status?.phase !== 'Bound') continue;
    if (!vn) {
      out.push(`claim ${k} is Bound without spec.volumeName`);
      continue;
    }
    const other = claimOfVolume.get(vn);
    if (other) out.push(`volume ${vn} is bound by two claims: ${other} and ${k}`);
    claimOfVolume.set(vn, k);
    const v = volumeByName.get(vn);
    const ref = v?.spec?.claimRef;
    if (!v) out.push(`claim ${k} is Bound to volume ${vn}, which does not exist`);
    else if (key(ref?.namespace, ref?.name) !== k || (ref?.uid && ref.uid !== c.metadata?.uid)) out.push(`claim ${k} is Bound to ${vn}, whose claimRef is ${key(ref?.namespace, ref?.name)} (uid ${ref?.uid ?? '-'})`);
  }
  for (const [k, vn] of boundBefore) {
    const c = claimsByKey.get(k);
    if (!c) out.push(`claim ${k}, Bound to ${vn} before the faults, is gone`);
    else if (c.status?.phase !== 'Bound' || c.spec?.volumeName !== vn) out.push(`claim ${k} was Bound to ${vn} before the faults; now ${c.status?.phase ?? '-'} to ${c.spec?.volumeName ?? '-'}`);
  }
  return out;
}
