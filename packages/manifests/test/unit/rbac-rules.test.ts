import { expect } from 'chai';
import { checkRule, mergeRules, RbacRuleError, rulesAllow } from '../../src/index.js';
import type { PolicyRule } from '@topovol/shared';

const core = (resources: string[], verbs: string[], resourceNames?: string[]): PolicyRule => ({ apiGroups: [''], resources, verbs, ...(resourceNames ? { resourceNames } : {}) });

/** Every (group, resource, verb, name) the rules mention, to compare grants, not shapes. */
function atoms(rules: PolicyRule[]): [string, string, string, string | undefined][] {
  const names = [undefined, ...new Set(rules.flatMap((r) => r.resourceNames ?? []))];
  const out: [string, string, string, string | undefined][] = [];
  for (const g of new Set(rules.flatMap((r) => r.apiGroups)))
    for (const res of new Set(rules.flatMap((r) => r.resources)))
      for (const v of new Set(rules.flatMap((r) => r.verbs))) for (const n of names) out.push([g, res, v, n]);
  return out;
}

describe('manifests: RBAC rule merging (config/rbac ClusterRoles)', function () {
  const cases: { name: string; in: PolicyRule[]; want: PolicyRule[] }[] = [
    { name: 'empty stays empty', in: [], want: [] },
    {
      name: 'verbs of one resource from several rules are unioned, in kubectl order',
      in: [core(['events'], ['patch', 'create']), core(['events'], ['watch', 'list'])],
      want: [core(['events'], ['list', 'watch', 'create', 'patch'])],
    },
    {
      name: 'resources with the same verbs share a rule; different verbs stay apart',
      in: [core(['pods'], ['get', 'list', 'watch']), core(['nodes'], ['get', 'list', 'watch']), core(['persistentvolumes'], ['get', 'list', 'watch', 'update'])],
      want: [core(['nodes', 'pods'], ['get', 'list', 'watch']), core(['persistentvolumes'], ['get', 'list', 'watch', 'update'])],
    },
    {
      name: 'a rule over two groups is split per group (merging groups could grant more)',
      in: [{ apiGroups: ['', 'apps'], resources: ['pods'], verbs: ['get'] }],
      want: [core(['pods'], ['get']), { apiGroups: ['apps'], resources: ['pods'], verbs: ['get'] }],
    },
    {
      name: 'named rules do not merge with unnamed ones',
      in: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] }, { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['b', 'a'] }],
      want: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['a', 'b'] },
      ],
    },
    {
      name: 'duplicates collapse',
      in: [core(['pods'], ['get', 'get']), core(['pods'], ['get'])],
      want: [core(['pods'], ['get'])],
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const got = mergeRules(c.in, 'test');
      expect(got).to.deep.equal(c.want);
      // The grant is exactly the union of the inputs, whatever the shape.
      for (const [g, r, v, n] of atoms(c.in)) expect(rulesAllow(got, g, r, v, n), `${g}/${r} ${v} ${n ?? ''}`).to.equal(rulesAllow(c.in, g, r, v, n));
    });
  }

  const wildcards: PolicyRule[] = [
    { apiGroups: ['*'], resources: ['pods'], verbs: ['get'] },
    core(['*'], ['get']),
    core(['pods/*'], ['get']),
    core(['pods'], ['*']),
    core(['pods'], ['get'], ['*']),
  ];
  for (const rule of wildcards) {
    it(`rejects a wildcard: ${JSON.stringify(rule)}`, function () {
      expect(() => mergeRules([core(['nodes'], ['get']), rule], 'controller x')).to.throw(RbacRuleError, /wildcard/);
    });
  }
  it('rejects empty lists (a rule that grants nothing is a mistake)', function () {
    expect(() => checkRule(core([], ['get']), 'x')).to.throw(RbacRuleError, /empty resources/);
    expect(() => checkRule(core(['pods'], []), 'x')).to.throw(RbacRuleError, /empty verbs/);
  });
  it('rulesAllow: named rules allow only their names', function () {
    const rules = [core(['leases'], ['get'], ['mine'])];
    expect(rulesAllow(rules, '', 'leases', 'get', 'mine')).to.equal(true);
    expect(rulesAllow(rules, '', 'leases', 'get', 'other')).to.equal(false);
    expect(rulesAllow(rules, '', 'leases', 'get')).to.equal(false);
  });
});
