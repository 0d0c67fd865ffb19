import { labelValue } from './label-selector.js';
import { labelKeyProblem, labelValueProblem } from './label-syntax.js';

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

/** A base-10 int64, as strconv.ParseInt(s, 10, 64) reads one; undefined otherwise. */
function int64(s: string): bigint | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

const expressionProblems = new WeakMap<NodeSelectorRequirement, string | null>();

/**
 * Why upstream's matcher refuses a matchExpressions requirement, which makes its whole term match
 * no node, or undefined. nodeSelectorRequirementsAsSelector (k8s.io/component-helpers/scheduling/
 * corev1/nodeaffinity) builds each with labels.NewRequirement (k8s.io/apimachinery/pkg/labels/
 * selector.go), which validates what API validation of a volume's nodeAffinity does not: every value
 * must be a valid label value, so `NotIn ["a b"]` or `Gt ["-5"]` reach no node. Cached per
 * requirement object: volumes' affinities are matched against every node.
 */
function expressionProblem(r: NodeSelectorRequirement): string | undefined {
  const cached = expressionProblems.get(r);
  if (cached !== undefined) return cached ?? undefined;
  const problem = findExpressionProblem(r);
  expressionProblems.set(r, problem ?? null);
  return problem;
}

function findExpressionProblem(r: NodeSelectorRequirement): string | undefined {
  const values = r.values ?? [];
  const key = labelKeyProblem(r.key);
  if (key) return `key ${key}`;
  switch (r.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) return `"${r.key} ${r.operator}" lists no values`;
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) return `"${r.key} ${r.operator}" lists values`;
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1 || int64(values[0]!) === undefined) return `"${r.key} ${r.operator}" needs exactly one integer value, not ${JSON.stringify(values)}`;
      break;
    default:
      return `unknown operator "${r.operator}"`;
  }
  for (const v of values) {
    const bad = v === '' ? undefined : labelValueProblem(v);
    if (bad) return `"${r.key} ${r.operator}": value ${bad}`;
  }
  return undefined;
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
      // Both sides as int64 (Requirement.Matches): a node value out of range matches neither.
      const a = value === undefined ? undefined : int64(value);
      const b = values.length === 1 ? int64(values[0]!) : undefined;
      if (a === undefined || b === undefined) return false;
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
  for (const r of exprs) if (expressionProblem(r) !== undefined || !requirementMatches(r, labelValue(labels, r.key))) return false;
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

/** Why a requirement can match no node whatever its labels, or undefined. */
function requirementNeverMatches(r: NodeSelectorRequirement, field: boolean): string | undefined {
  if (!field) return expressionProblem(r);
  if (r.key !== 'metadata.name') return `matchFields supports only metadata.name, not "${r.key}"`;
  // A node's name, matched as requirementMatches does (a deliberate difference: docs/divergences.md).
  switch (r.operator) {
    case 'In':
      return (r.values ?? []).length === 0 ? `"${r.key} In" lists no values` : undefined;
    case 'NotIn':
    case 'Exists':
    case 'DoesNotExist':
      return undefined;
    case 'Gt':
    case 'Lt':
      return (r.values ?? []).length === 1 && int64(r.values![0]!) !== undefined ? undefined : `"${r.key} ${r.operator}" needs exactly one integer value, not ${JSON.stringify(r.values ?? [])}`;
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
