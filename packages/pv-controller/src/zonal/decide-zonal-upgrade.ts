import type { PersistentVolume } from '@topovol/shared';
import { parseZonalLabel, ZONAL_LABELS } from './zonal-labels.js';

export type VolumeNodeAffinity = NonNullable<NonNullable<PersistentVolume['spec']>['nodeAffinity']>;

/** What the zonal upgrade should do with one PV. */
export type ZonalUpgradeDecision =
  /** Nothing to convert, or not ours to change. */
  | { kind: 'none'; why: 'noZonalLabels' | 'hasNodeAffinity' | 'terminating' }
  /** Set spec.nodeAffinity to this; labels stay as they are. */
  | { kind: 'upgrade'; nodeAffinity: VolumeNodeAffinity; summary: string }
  /** A zonal label cannot be read: report it and leave the PV alone. */
  | { kind: 'malformed'; reason: string };

/**
 * Seed 001, "Zonal PV Upgrade": a PV scheduled by its zone/region labels gets the equivalent
 * required node affinity (one In requirement per label, in a single term, as the PV label
 * admission plugin builds it), keeping the labels for components that still read them.
 */
export function decideZonalUpgrade(pv: PersistentVolume): ZonalUpgradeDecision {
  // The API server lets nodeAffinity be set only while it is unset; one that exists (even empty)
  // was chosen by someone else and is never ours to rewrite.
  if (pv.spec?.nodeAffinity != null) return { kind: 'none', why: 'hasNodeAffinity' };
  // Converting a volume on its way out helps no one and only races its deletion.
  if (pv.metadata?.deletionTimestamp) return { kind: 'none', why: 'terminating' };

  const labels = pv.metadata?.labels ?? {};
  const matchExpressions: { key: string; operator: string; values: string[] }[] = [];
  const problems: string[] = [];
  for (const label of ZONAL_LABELS) {
    const value = labels[label.key];
    if (value === undefined) continue;
    const parsed = parseZonalLabel(label, value);
    if (parsed.ok) matchExpressions.push({ key: label.key, operator: 'In', values: parsed.values });
    else problems.push(parsed.reason);
  }
  // All or nothing: half an affinity would let the volume be used where the other label forbids.
  if (problems.length) return { kind: 'malformed', reason: problems.join('; ') };
  if (!matchExpressions.length) return { kind: 'none', why: 'noZonalLabels' };
  return {
    kind: 'upgrade',
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions }] } },
    summary: matchExpressions.map((r) => `${r.key} in (${r.values.join(', ')})`).join(', '),
  };
}
