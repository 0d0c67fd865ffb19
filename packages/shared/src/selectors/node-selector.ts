import { labelValue } from './label-selector.js';
/** core/v1 NodeSelector semantics, as used by PV nodeAffinity and StorageClass allowedTopologies. */
export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface NodeLike {
  metadata?: { name?: string; labels?: Record<string, string> };
}

function requirementMatches(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!)) return false;
      const a = BigInt(value);
      const b = BigInt(values[0]!);
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default:
      return false;
  }
}

/**
 * Terms are ORed, requirements within a term ANDed; a term with no requirements matches nothing
 * (as upstream's nodeaffinity helpers). matchFields supports metadata.name only, as the API does.
 */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: NodeLike): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  for (const r of exprs) if (!requirementMatches(r, labelValue(labels, r.key))) return false;
  for (const f of fields) {
    if (f.key !== 'metadata.name' || !requirementMatches(f, node.metadata?.name)) return false;
  }
  return true;
}

export function nodeSelectorMatches(selector: NodeSelector | undefined, node: NodeLike): boolean {
  if (!selector) return true;
  // A selector without terms (refused by validation, so only from a forged or pre-validation object) matches nothing.
  return (selector.nodeSelectorTerms ?? []).some((t) => nodeSelectorTermMatches(t, node));
}

const INTEGER = /^-?\d+$/;

/** Why a requirement can match no node whatever its labels, or undefined. */
function requirementNeverMatches(r: NodeSelectorRequirement, field: boolean): string | undefined {
  if (field && r.key !== 'metadata.name') return `matchFields supports only metadata.name, not "${r.key}"`;
  switch (r.operator) {
    case 'In':
      return (r.values ?? []).length === 0 ? `"${r.key} In" lists no values` : undefined;
    case 'NotIn':
    case 'Exists':
    case 'DoesNotExist':
      return undefined;
    case 'Gt':
    case 'Lt':
      return (r.values ?? []).length === 1 && INTEGER.test(r.values![0]!) ? undefined : `"${r.key} ${r.operator}" needs exactly one integer value, not ${JSON.stringify(r.values ?? [])}`;
    default:
      return `unknown operator "${r.operator}"`;
  }
}

/**
 * Why a node selector (a PV's spec.nodeAffinity.required) can match no node at all, or undefined
 * when some node could match: every term is empty or has a requirement that never matches. The
 * API server accepts such selectors (an empty term, `Gt` with a non-integer value), so a volume
 * carrying one is valid yet unusable; saying so beats leaving it Available forever in silence.
 */
export function nodeSelectorNeverMatches(selector: NodeSelector | undefined): string | undefined {
  if (!selector) return undefined;
  const terms = selector.nodeSelectorTerms ?? [];
  if (terms.length === 0) return 'it has no node selector terms';
  const why: string[] = [];
  for (const [i, t] of terms.entries()) {
    const reqs = [...(t.matchExpressions ?? []).map((r) => requirementNeverMatches(r, false)), ...(t.matchFields ?? []).map((r) => requirementNeverMatches(r, true))];
    if (reqs.length === 0) why.push(`term ${i + 1} has no requirements`);
    else {
      const never = reqs.find((r) => r !== undefined);
      if (!never) return undefined;
      why.push(`term ${i + 1}: ${never}`);
    }
  }
  return why.join('; ');
}

/** A PV's spec.nodeAffinity: no affinity means reachable from every node. */
export function volumeNodeAffinityMatches(nodeAffinity: { required?: NodeSelector } | undefined, node: NodeLike): boolean {
  return nodeSelectorMatches(nodeAffinity?.required, node);
}
