import type { PersistentVolume } from '@topovol/shared';
import { describeVolumeZone, volumeZoneTerms } from './volume-zone-affinity.js';
import type { ZonalConstraint } from './volume-zone-affinity.js';
import { parseZonalLabel, ZONAL_LABELS } from './zonal-labels.js';

export type VolumeNodeAffinity = NonNullable<NonNullable<PersistentVolume['spec']>['nodeAffinity']>;

/** What the zonal upgrade should do with one PV. */
export type ZonalUpgradeDecision =
  /** Nothing to convert, or not ours to change. */
  | { kind: 'none'; why: 'noZonalLabels' | 'hasNodeAffinity' | 'terminating' | 'csiTranslated' }
  /** Set spec.nodeAffinity to this; labels stay as they are. */
  | { kind: 'upgrade'; nodeAffinity: VolumeNodeAffinity; summary: string }
  /** A zonal label cannot be read: report it and leave the PV alone. */
  | { kind: 'malformed'; reason: string };

/**
 * In-tree volume sources whose topology k8s.io/csi-translation-lib translates when the volume is
 * used through CSI migration (plugins/in_tree_volume.go, translateTopologyFromInTreeToCSI, called
 * by the GCE PD, AWS EBS, Azure Disk and Cinder translators; vSphere's translator handles zones too).
 */
export const CSI_TRANSLATED_SOURCES = ['gcePersistentDisk', 'awsElasticBlockStore', 'azureDisk', 'cinder', 'vsphereVolume'] as const;

/**
 * KEP-490 (Topology-aware volume scheduling), "Zonal PV Upgrade": a PV scheduled by its zone/region
 * labels gets a required node affinity accepting the same nodes as the kube-scheduler's VolumeZone
 * filter does today (see volumeZoneTerms), keeping the labels for components that still read them.
 */
export function decideZonalUpgrade(pv: PersistentVolume): ZonalUpgradeDecision {
  // The API server lets nodeAffinity be set only while it is unset; one that exists (even empty)
  // was chosen by someone else and is never ours to rewrite.
  if (pv.spec?.nodeAffinity != null) return { kind: 'none', why: 'hasNodeAffinity' };
  // Converting a volume on its way out helps no one and only races its deletion.
  if (pv.metadata?.deletionTimestamp) return { kind: 'none', why: 'terminating' };
  // Under CSI migration the scheduler reads such a volume through csi-translation-lib, which turns
  // its zone labels into the driver's own topology key, but turns an affinity's zone keys (ours
  // included) into that key too: nodes carrying only the driver's label would no longer match.
  if (CSI_TRANSLATED_SOURCES.some((src) => pv.spec?.[src] != null)) return { kind: 'none', why: 'csiTranslated' };

  const labels = pv.metadata?.labels ?? {};
  const constraints: ZonalConstraint[] = [];
  const problems: string[] = [];
  for (const label of ZONAL_LABELS) {
    const value = labels[label.key];
    if (value === undefined) continue;
    const parsed = parseZonalLabel(label, value);
    if (parsed.ok) constraints.push({ label, values: parsed.values });
    else problems.push(parsed.reason);
  }
  // All or nothing: half an affinity would let the volume be used where the other label forbids.
  if (problems.length) return { kind: 'malformed', reason: problems.join('; ') };
  if (!constraints.length) return { kind: 'none', why: 'noZonalLabels' };
  const nodeSelectorTerms = volumeZoneTerms(constraints);
  return {
    kind: 'upgrade',
    nodeAffinity: { required: { nodeSelectorTerms } },
    summary: describeVolumeZone(constraints, nodeSelectorTerms.length),
  };
}
