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
 * A label's value, or undefined when the object has no such label. Labels are parsed JSON objects:
 * indexed directly, a valid key such as `constructor` or `toString` reads Object.prototype's member,
 * and a node without that label would seem to have it (Exists, DoesNotExist, a topology segment).
 */
export function labelValue(labels: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  return labels !== undefined && Object.hasOwn(labels, key) ? labels[key] : undefined;
}

/**
 * Whether labels satisfy the selector. An empty selector matches everything (as in a PVC's
 * spec.selector); an unknown operator matches nothing, so a malformed selector never binds.
 */
export function labelSelectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labelValue(l, k) !== v) return false;
  for (const r of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, r.key);
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
