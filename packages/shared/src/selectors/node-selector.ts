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
  for (const r of exprs) if (!requirementMatches(r, labels[r.key])) return false;
  for (const f of fields) {
    if (f.key !== 'metadata.name' || !requirementMatches(f, node.metadata?.name)) return false;
  }
  return true;
}

export function nodeSelectorMatches(selector: NodeSelector | undefined, node: NodeLike): boolean {
  if (!selector) return true;
  return selector.nodeSelectorTerms.some((t) => nodeSelectorTermMatches(t, node));
}

/** A PV's spec.nodeAffinity: no affinity means reachable from every node. */
export function volumeNodeAffinityMatches(nodeAffinity: { required?: NodeSelector } | undefined, node: NodeLike): boolean {
  return nodeSelectorMatches(nodeAffinity?.required, node);
}
