import { expect } from 'chai';
import { atomLabel, ruleAtoms, rulesAllow, rulesWithout } from '@topovol/manifests';
import type { PolicyRule } from '@topovol/shared';
import { ANY_OWNER_FINALIZERS, authorizationRecords, ownerReferenceRefusals } from '../../src/audit-log.js';
import type { AuditEvent } from '../../src/audit-log.js';
import { ADMISSION_ONLY, generatedRoles, isPartialRun, rbacCoverage } from '../../src/rbac-coverage.js';
import { yamlFiles } from '../../src/apply-manifests.js';
import { repoRoot } from '../../src/repo-root.js';
import path from 'node:path';

const SA = 'system:serviceaccount:topovol-system:topovol-pv-binder';
let id = 0;
function event(verb: string, resource: string, extra: { group?: string; sub?: string; name?: string; ns?: string; decision?: string; reason?: string; user?: string; stage?: string; auditID?: string } = {}): AuditEvent {
  return {
    auditID: extra.auditID ?? `id-${++id}`,
    stage: extra.stage ?? 'ResponseComplete',
    verb,
    requestURI: '/x',
    user: { username: extra.user ?? SA },
    objectRef: { resource, apiGroup: extra.group, subresource: extra.sub, name: extra.name, namespace: extra.ns },
    annotations: {
      'authorization.k8s.io/decision': extra.decision ?? 'allow',
      'authorization.k8s.io/reason': extra.reason ?? 'RBAC: allowed by ClusterRoleBinding "topovol-pv-binder" of ClusterRole "topovol-pv-binder" to ServiceAccount "topovol-pv-binder/topovol-system"',
    },
  };
}

describe('testing: the audit log as RBAC evidence (least privilege, proven)', function () {
  it("reads OwnerReferencesPermissionEnforcement's refusals as the grants they want: delete on the object, update on an owner's finalizers", function () {
    const refused = (e: AuditEvent, message: string, code = 403): AuditEvent => ({ ...e, responseStatus: { code, message } });
    const records = ownerReferenceRefusals([
      refused(event('patch', 'csidrivercapacities', { group: 'topovol.io', name: 'd' }), 'csidrivercapacities.topovol.io "d" is forbidden: cannot set an ownerRef on a resource you can\'t delete: , <nil>'),
      refused(event('create', 'persistentvolumeclaims', { ns: 'n', name: 'p-scratch' }), 'persistentvolumeclaims "p-scratch" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>'),
      // Not the plugin's: a refusal of RBAC's own, an answer that was not a refusal, a stage before the answer.
      refused(event('create', 'persistentvolumeclaims', { decision: 'forbid' }), 'persistentvolumeclaims is forbidden: User "x" cannot create resource'),
      refused(event('patch', 'csidrivercapacities', { group: 'topovol.io' }), "cannot set an ownerRef on a resource you can't delete", 409),
      refused(event('patch', 'csidrivercapacities', { group: 'topovol.io', stage: 'ResponseStarted' }), "cannot set an ownerRef on a resource you can't delete"),
    ]);
    expect(records).to.deep.equal([
      { user: SA, group: 'topovol.io', resource: 'csidrivercapacities', verb: 'delete', namespace: undefined, name: 'd', allowed: false },
      { user: SA, group: '', resource: ANY_OWNER_FINALIZERS, verb: 'update', namespace: 'n', name: 'p-scratch', allowed: false },
    ]);
  });

  it('reads one record per request, with the role RBAC cited (ClusterRole or namespaced Role)', function () {
    const records = authorizationRecords([
      event('update', 'persistentvolumes', { sub: 'status', name: 'pv-1', auditID: 'a' }),
      event('update', 'persistentvolumes', { sub: 'status', name: 'pv-1', auditID: 'a', stage: 'ResponseStarted' }),
      event('get', 'leases', { group: 'coordination.k8s.io', ns: 'topovol-system', name: 'topovol-pv-binder', reason: 'RBAC: allowed by RoleBinding "topovol-pv-binder-leader-election/topovol-system" of Role "topovol-pv-binder-leader-election" to ServiceAccount "topovol-pv-binder/topovol-system"' }),
      event('delete', 'persistentvolumes', { decision: 'forbid', reason: '' }),
      { ...event('get', 'x'), objectRef: undefined },
    ]);
    expect(records).to.deep.equal([
      { user: SA, group: '', resource: 'persistentvolumes/status', verb: 'update', namespace: undefined, name: 'pv-1', allowed: true, role: 'ClusterRole/topovol-pv-binder' },
      { user: SA, group: 'coordination.k8s.io', resource: 'leases', verb: 'get', namespace: 'topovol-system', name: 'topovol-pv-binder', allowed: true, role: 'Role/topovol-system/topovol-pv-binder-leader-election' },
      { user: SA, group: '', resource: 'persistentvolumes', verb: 'delete', namespace: undefined, name: undefined, allowed: false, role: undefined },
    ]);
  });

  const role = { id: 'ClusterRole/topovol-pv-binder', rules: [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch', 'update'] }] };
  const leRole = { id: 'Role/topovol-system/topovol-pv-binder-leader-election', rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'], resourceNames: ['topovol-pv-binder'] }] };
  const cases: { name: string; events: AuditEvent[]; unused: string[]; forbidden: number }[] = [
    { name: 'nothing used: every atom unused', events: [], unused: ['list persistentvolumes', 'watch persistentvolumes', 'update persistentvolumes', 'get coordination.k8s.io/leases [topovol-pv-binder]'], forbidden: 0 },
    {
      name: 'each atom used once: none unused',
      events: [event('list', 'persistentvolumes'), event('watch', 'persistentvolumes'), event('update', 'persistentvolumes', { name: 'a' }), authorizationLease('topovol-pv-binder')],
      unused: [],
      forbidden: 0,
    },
    { name: 'a subresource is not its resource', events: [event('list', 'persistentvolumes'), event('watch', 'persistentvolumes'), event('update', 'persistentvolumes', { sub: 'status' }), authorizationLease('topovol-pv-binder')], unused: ['update persistentvolumes'], forbidden: 0 },
    { name: 'a named atom needs that name', events: [event('list', 'persistentvolumes'), event('watch', 'persistentvolumes'), event('update', 'persistentvolumes'), authorizationLease('other')], unused: ['get coordination.k8s.io/leases [topovol-pv-binder]'], forbidden: 0 },
    {
      name: 'a request another role granted first does not use this one (redundant rule)',
      events: [event('list', 'persistentvolumes', { reason: 'RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "other" to ServiceAccount' }), event('watch', 'persistentvolumes'), event('update', 'persistentvolumes'), authorizationLease('topovol-pv-binder')],
      unused: ['list persistentvolumes'],
      forbidden: 0,
    },
    { name: 'other users do not count', events: [event('list', 'persistentvolumes', { user: 'someone' }), event('delete', 'pods', { user: 'someone', decision: 'forbid' })], unused: ['list persistentvolumes', 'watch persistentvolumes', 'update persistentvolumes', 'get coordination.k8s.io/leases [topovol-pv-binder]'], forbidden: 0 },
    { name: 'refusals of the watched users are reported', events: [event('delete', 'persistentvolumes', { decision: 'forbid', reason: '' })], unused: ['list persistentvolumes', 'watch persistentvolumes', 'update persistentvolumes', 'get coordination.k8s.io/leases [topovol-pv-binder]'], forbidden: 1 },
  ];
  for (const c of cases) {
    it(`coverage: ${c.name}`, function () {
      const got = rbacCoverage([role, leRole], authorizationRecords(c.events), new Set([SA]));
      expect(got.unused.map((u) => u.label)).to.deep.equal(c.unused);
      expect(got.forbidden).to.have.length(c.forbidden);
    });
  }

  it('coverage: a grant only an admission plugin asks about is not reported unused; the list names only generated grants', function () {
    const got = rbacCoverage([role, leRole], authorizationRecords([authorizationLease('topovol-pv-binder')]), new Set([SA]), { 'ClusterRole/topovol-pv-binder': ['update persistentvolumes'] });
    expect(got.unused.map((u) => u.label)).to.deep.equal(['list persistentvolumes', 'watch persistentvolumes']);
    const roles = generatedRoles(yamlFiles(path.join(repoRoot(), 'config', 'rbac')));
    // The scrapers' role (non-resource rules) is no manager's: not checked for use, and its rules have no atoms.
    expect(roles.map((r) => r.id)).to.not.include('ClusterRole/topovol-metrics-reader');
    expect(() => roles.forEach((r) => ruleAtoms(r.rules))).to.not.throw();
    for (const [id, labels] of Object.entries(ADMISSION_ONLY)) {
      const generated = ruleAtoms(roles.find((r) => r.id === id)?.rules ?? []).map(atomLabel);
      for (const l of labels) expect(generated, `${id}: ${l}`).to.include(l);
    }
  });

  it('rulesWithout removes exactly one atom: everything else still allowed, that one not', function () {
    const rules: PolicyRule[] = [
      { apiGroups: ['', 'storage.k8s.io'], resources: ['persistentvolumes', 'storageclasses'], verbs: ['get', 'list'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['a'] },
    ];
    const all = ruleAtoms(rules);
    expect(all).to.have.length(10);
    for (const atom of all) {
      const reduced = rulesWithout(rules, atom);
      for (const other of all) {
        const name = other.resourceNames?.[0];
        expect(rulesAllow(reduced, other.group, other.resource, other.verb, name), `without ${atomLabel(atom)}: ${atomLabel(other)}`).to.equal(other !== atom);
      }
    }
  });
});

function authorizationLease(name: string): AuditEvent {
  return event('get', 'leases', {
    group: 'coordination.k8s.io',
    ns: 'topovol-system',
    name,
    reason: 'RBAC: allowed by RoleBinding "topovol-pv-binder-leader-election/topovol-system" of Role "topovol-pv-binder-leader-election" to ServiceAccount "topovol-pv-binder/topovol-system"',
  });
}

describe('isPartialRun', function () {
  it('is a run narrowed by --grep or --fgrep, in any of their spellings, and nothing else', function () {
    const run = (...args: string[]): boolean => isPartialRun(['node', 'mocha', '--config', '.mocharc.integration.json', ...args]);
    expect([run('--grep', 'install'), run('--grep=install'), run('-g', 'x'), run('--fgrep', 'x'), run('-f', 'x')]).to.deep.equal([true, true, true, true, true]);
    expect([run(), run('--exit'), run('--grep-like-file.js'), run('packages/a/dist/test/integration/grep.test.js')]).to.deep.equal([false, false, false, false]);
  });
});
