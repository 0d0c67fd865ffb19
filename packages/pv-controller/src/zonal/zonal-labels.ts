import { LABEL_BETA_REGION, LABEL_BETA_ZONE, LABEL_REGION, LABEL_ZONE, labelValueProblem } from '@topovol/shared';
/**
 * The legacy zone/region labels a PV may carry and how their values are read, as the
 * kube-scheduler's VolumeZone filter reads them
 * (kubernetes pkg/scheduler/framework/plugins/volumezone/volume_zone.go, getPVTopologies, with
 * LabelZonesToSet from k8s.io/cloud-provider volume/helpers/zones.go).
 */

/** A multi-zone volume lists its zones in one label value joined by this (LabelMultiZoneDelimiter). */
export const MULTI_ZONE_DELIMITER = '__';

export interface ZonalLabel {
  key: string;
  /**
   * For a beta label, the GA label VolumeZone reads instead on a node that lacks this one
   * (translateToGALabel). A GA label has no fallback.
   */
  gaKey?: string;
}

/**
 * Every label the upgrade converts, in the order its requirements are written: GA family first,
 * zone before region (the order of the example in KEP-490's "Zonal PV Upgrade and Downgrade").
 * These are exactly VolumeZone's topologyLabels.
 */
export const ZONAL_LABELS: readonly ZonalLabel[] = [
  { key: LABEL_ZONE },
  { key: LABEL_REGION },
  { key: LABEL_BETA_ZONE, gaKey: LABEL_ZONE },
  { key: LABEL_BETA_REGION, gaKey: LABEL_REGION },
];

export type ParsedLabel = { ok: true; values: string[] } | { ok: false; reason: string };

/**
 * The node-selector values a zonal label stands for. Every one of the four labels, regions
 * included, splits on "__" into a sorted set, because VolumeZone applies LabelZonesToSet to each
 * of them. An empty element anywhere ("a____b", "__a", "a__", or "") makes the whole value
 * unusable, as LabelZonesToSet refuses it too. (Its whitespace trimming never applies: label values
 * cannot contain whitespace.)
 */
export function parseZonalLabel(label: ZonalLabel, value: string): ParsedLabel {
  if (value === '') return { ok: false, reason: `label ${label.key}="": the value must not be empty` };
  const parts = value.split(MULTI_ZONE_DELIMITER);
  if (parts.some((p) => p === '')) {
    return { ok: false, reason: `label ${label.key}="${value}": the "${MULTI_ZONE_DELIMITER}" separated list must not contain an empty element` };
  }
  // Node-selector values are validated as label values: "a___b" splits into "a" and "_b", which
  // the API server would refuse, so say so here instead of failing the write.
  const invalid = parts.find((p) => labelValueProblem(p) !== undefined);
  if (invalid !== undefined) return { ok: false, reason: `label ${label.key}="${value}": "${invalid}" is not a valid zone (label value) name` };
  return { ok: true, values: [...new Set(parts)].sort() };
}
