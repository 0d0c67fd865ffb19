/**
 * The legacy zone/region labels a PV may carry and how their values are read, as upstream's
 * k8s.io/cloud-provider volume helpers (LabelZonesToSet) and the PV label admission plugin do.
 */

export const LABEL_BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
export const LABEL_BETA_REGION = 'failure-domain.beta.kubernetes.io/region';
export const LABEL_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_REGION = 'topology.kubernetes.io/region';

/** A multi-zone volume lists its zones in one label value joined by this (LabelMultiZoneDelimiter). */
export const MULTI_ZONE_DELIMITER = '__';

export interface ZonalLabel {
  key: string;
  /** Zone labels may name several zones; region labels always name one region. */
  multiZone: boolean;
}

/**
 * Every label the upgrade converts, in the order the requirements are written: GA family first,
 * zone before region (the seed's example order). Each key becomes a requirement on the same key,
 * so beta labels stay beta and GA labels stay GA, matching what nodes carry.
 */
export const ZONAL_LABELS: readonly ZonalLabel[] = [
  { key: LABEL_ZONE, multiZone: true },
  { key: LABEL_REGION, multiZone: false },
  { key: LABEL_BETA_ZONE, multiZone: true },
  { key: LABEL_BETA_REGION, multiZone: false },
];

export type ParsedLabel = { ok: true; values: string[] } | { ok: false; reason: string };

/**
 * The node-selector values a zonal label stands for. Zone values split on "__" into a sorted set
 * (LabelZonesToSet, sorted as the admission plugin does); an empty element anywhere ("a____b",
 * "__a", "a__", or "") makes the whole value unusable, as upstream refuses it too.
 */
export function parseZonalLabel(label: ZonalLabel, value: string): ParsedLabel {
  const parts = label.multiZone ? value.split(MULTI_ZONE_DELIMITER) : [value];
  if (parts.some((p) => p === '')) {
    return {
      ok: false,
      reason: label.multiZone
        ? `label ${label.key}="${value}": the "${MULTI_ZONE_DELIMITER}" separated list must not contain an empty zone`
        : `label ${label.key}="${value}": the region must not be empty`,
    };
  }
  // Node-selector values are validated as label values: "a___b" splits into "a" and "_b", which
  // the API server would refuse, so say so here instead of failing the write.
  const invalid = parts.find((p) => !LABEL_VALUE.test(p));
  if (invalid !== undefined) return { ok: false, reason: `label ${label.key}="${value}": "${invalid}" is not a valid zone (label value) name` };
  return { ok: true, values: [...new Set(parts)].sort() };
}

/** A non-empty label value (apimachinery's qualified-name value rule; length is bounded by the label itself). */
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
