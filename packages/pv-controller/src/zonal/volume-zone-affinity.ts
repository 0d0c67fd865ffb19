import { ZONAL_LABELS } from './zonal-labels.js';
import type { ZonalLabel } from './zonal-labels.js';

/** One zone/region label of a PV and the values it allows, as VolumeZone reads it. */
export interface ZonalConstraint {
  label: ZonalLabel;
  values: string[];
}

export interface Requirement {
  key: string;
  operator: 'In' | 'DoesNotExist';
  values?: string[];
}

export interface Term {
  matchExpressions: Requirement[];
}

/**
 * Node-selector terms accepting exactly the nodes the kube-scheduler's VolumeZone filter accepts
 * for a PV with these labels (kubernetes pkg/scheduler/framework/plugins/volumezone/volume_zone.go,
 * Filter). Anything narrower would make the VolumeBinding filter, which checks nodeAffinity,
 * refuse nodes the volume is schedulable on today.
 *
 * VolumeZone passes a node that has none of the four zone/region labels. Otherwise, for each PV
 * label k it reads the node's k or, for a beta k the node lacks, the GA counterpart g, and
 * requires that value in the PV's set. So each beta k becomes (k In V) OR (k DoesNotExist AND
 * g In V), each GA k becomes (k In V); the conjunction over the PV's labels is expanded into ORed
 * terms, followed by one term for nodes without any of the four labels.
 *
 * The first term is KEP-490's "Zonal PV Upgrade" example shape, each label key In its values, so a
 * reader recognises the upgrade; the others only widen it to what VolumeZone allows.
 */
export function volumeZoneTerms(constraints: readonly ZonalConstraint[]): Term[] {
  let terms: Requirement[][] = [[]];
  for (const c of constraints) {
    const next: Requirement[][] = [];
    for (const term of terms) {
      for (const alternative of alternativesFor(c)) {
        const joined = conjoin(term, alternative);
        if (joined) next.push(joined);
      }
    }
    terms = next;
  }
  const unlabelled: Requirement[] = ZONAL_LABELS.map((l) => ({ key: l.key, operator: 'DoesNotExist' }));
  return [...terms, unlabelled].map((matchExpressions) => ({ matchExpressions }));
}

/** What volumeZoneTerms accepts, in words, for Events and logs. */
export function describeVolumeZone(constraints: readonly ZonalConstraint[], termCount: number): string {
  const each = constraints.map((c) => `${c.label.key}${c.label.gaKey ? ` (or ${c.label.gaKey} if absent)` : ''} in (${c.values.join(', ')})`);
  return `${each.join(', ')}; nodes without zone/region labels too (${termCount} terms)`;
}

/** The ways a node can satisfy one PV label, each a conjunction; the first is the label's own key. */
function alternativesFor(c: ZonalConstraint): Requirement[][] {
  const own: Requirement[] = [{ key: c.label.key, operator: 'In', values: [...c.values] }];
  if (c.label.gaKey === undefined) return [own];
  return [own, [{ key: c.label.key, operator: 'DoesNotExist' }, { key: c.label.gaKey, operator: 'In', values: [...c.values] }]];
}

/**
 * The conjunction of two requirement lists with at most one requirement per key, or undefined when
 * no node can satisfy it: two In on one key intersect (a beta label's GA fallback meeting the GA
 * label itself), and In against DoesNotExist on one key contradict.
 */
function conjoin(term: readonly Requirement[], more: readonly Requirement[]): Requirement[] | undefined {
  const out = term.map((r) => ({ ...r }));
  for (const r of more) {
    const i = out.findIndex((o) => o.key === r.key);
    const existing = out[i];
    if (existing === undefined) {
      out.push({ ...r });
      continue;
    }
    if (existing.operator !== r.operator) return undefined;
    if (r.operator === 'DoesNotExist') continue;
    const values = (existing.values ?? []).filter((v) => (r.values ?? []).includes(v));
    if (values.length === 0) return undefined;
    out[i] = { ...existing, values };
  }
  return out;
}
