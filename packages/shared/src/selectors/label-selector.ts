/** metav1.LabelSelector semantics (matchLabels AND matchExpressions). */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/**
 * Whether labels satisfy the selector. An empty selector matches everything (as in a PVC's
 * spec.selector); an unknown operator matches nothing, so a malformed selector never binds.
 */
export function labelSelectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const r of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        if (!has || !values.includes(l[r.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(l[r.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
