import type { PolicyRule } from '@topovol/shared';

// kubectl's usual verb order, so generated ClusterRoles read like hand-written ones.
const VERB_ORDER = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

function byVerbOrder(a: string, b: string): number {
  const ia = VERB_ORDER.indexOf(a);
  const ib = VERB_ORDER.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0 || ib >= 0) return ia >= 0 ? -1 : 1;
  return a.localeCompare(b);
}

/** Thrown when a declared rule is unusable in least-privilege RBAC. */
export class RbacRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RbacRuleError';
  }
}

/** Rejects '*' anywhere and empty lists: every permission must be named (no wildcards: least privilege, proved by the RBAC necessity suites). */
export function checkRule(rule: PolicyRule, owner: string): void {
  const fields: [string, string[] | undefined][] = [
    ['apiGroups', rule.apiGroups],
    ['resources', rule.resources],
    ['verbs', rule.verbs],
    ['resourceNames', rule.resourceNames],
  ];
  for (const [field, values] of fields) {
    if (values === undefined) continue;
    if (values.length === 0) throw new RbacRuleError(`${owner}: a rule has an empty ${field}`);
    if (values.some((v) => v.includes('*'))) throw new RbacRuleError(`${owner}: wildcard in ${field} (${values.join(', ')}); name each permission`);
  }
}

/**
 * Merges rules into the fewest equivalent ones: the verbs of each (group, resource, names) are
 * unioned, then resources of one group with the same verbs and names share a rule. The grant is
 * exactly the union of the inputs (a rule is a cross product, so only identical verb sets merge).
 */
export function mergeRules(rules: readonly PolicyRule[], owner: string): PolicyRule[] {
  const atoms = new Map<string, { group: string; resource: string; names: string[] | undefined; verbs: Set<string> }>();
  for (const rule of rules) {
    checkRule(rule, owner);
    const names = rule.resourceNames ? [...new Set(rule.resourceNames)].sort() : undefined;
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = JSON.stringify([group, resource, names ?? null]);
        let atom = atoms.get(key);
        if (!atom) atoms.set(key, (atom = { group, resource, names, verbs: new Set() }));
        for (const v of rule.verbs) atom.verbs.add(v);
      }
    }
  }
  const merged = new Map<string, PolicyRule>();
  for (const atom of atoms.values()) {
    const verbs = [...atom.verbs].sort(byVerbOrder);
    const key = JSON.stringify([atom.group, verbs, atom.names ?? null]);
    const existing = merged.get(key);
    if (existing) existing.resources.push(atom.resource);
    else merged.set(key, { apiGroups: [atom.group], resources: [atom.resource], verbs, ...(atom.names ? { resourceNames: atom.names } : {}) });
  }
  const out = [...merged.values()];
  for (const r of out) r.resources.sort();
  return out.sort(
    (a, b) =>
      a.apiGroups[0]!.localeCompare(b.apiGroups[0]!) ||
      a.resources[0]!.localeCompare(b.resources[0]!) ||
      a.verbs.join(',').localeCompare(b.verbs.join(',')) ||
      (a.resourceNames ?? []).join(',').localeCompare((b.resourceNames ?? []).join(',')),
  );
}

/** True when `rules` allow verb on group/resource (optionally a named object), as RBAC evaluates it. */
export function rulesAllow(rules: readonly PolicyRule[], group: string, resource: string, verb: string, name?: string): boolean {
  return rules.some(
    (r) =>
      r.apiGroups.includes(group) &&
      r.resources.includes(resource) &&
      r.verbs.includes(verb) &&
      (r.resourceNames === undefined || (name !== undefined && r.resourceNames.includes(name))),
  );
}

/** The smallest unit of a grant: one verb on one resource of one group (optionally named objects). */
export interface RuleAtom {
  group: string;
  resource: string;
  verb: string;
  resourceNames?: string[];
}

/** Every atom the rules grant, in rule order. */
export function ruleAtoms(rules: readonly PolicyRule[]): RuleAtom[] {
  const out: RuleAtom[] = [];
  for (const r of rules)
    for (const group of r.apiGroups)
      for (const resource of r.resources)
        for (const verb of r.verbs) out.push({ group, resource, verb, ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}) });
  return out;
}

/** e.g. `update persistentvolumes/status`, `get coordination.k8s.io/leases [topovol-pv-binder]`. */
export function atomLabel(a: RuleAtom): string {
  const names = a.resourceNames ? ` [${a.resourceNames.join(', ')}]` : '';
  return `${a.verb} ${a.group ? `${a.group}/` : ''}${a.resource}${names}`;
}

/** The rules minus exactly one atom (for tests that show each permission is needed). */
export function rulesWithout(rules: readonly PolicyRule[], atom: RuleAtom): PolicyRule[] {
  const same = (a: RuleAtom): boolean => a.group === atom.group && a.resource === atom.resource && a.verb === atom.verb && (a.resourceNames ?? []).join(',') === (atom.resourceNames ?? []).join(',');
  return ruleAtoms(rules)
    .filter((a) => !same(a))
    .map((a) => ({ apiGroups: [a.group], resources: [a.resource], verbs: [a.verb], ...(a.resourceNames ? { resourceNames: a.resourceNames } : {}) }));
}
