import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { allInOneIdentity, ALL_IN_ONE_NAME, clusterRole, clusterRoles, controllerIdentity, INSTALL_NAMESPACE, leaderElectionRules, METRICS_READER_ROLE, metricsReaderRole, rulesAllow, serviceAccountUser } from '../../src/index.js';
import type { Manifest } from '../../src/index.js';
import type { ControllerDescriptor, PolicyRule } from '@topovol/shared';
import { repoRoot } from '@topovol/testing';
import { fakeDescriptor } from './fake-descriptors.js';

const find = (objs: Manifest[], kind: string): Manifest[] => objs.filter((o) => o.kind === kind);

describe('manifests: RBAC objects per loop (config/rbac)', function () {
  const binder = fakeDescriptor('pv-binder', [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'update'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  ]);
  const rollback = fakeDescriptor('rollback', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }]);

  it('ClusterRole topovol-<name> holds exactly the descriptor\'s rules', function () {
    const role = clusterRole(binder);
    expect(role.metadata.name).to.equal('topovol-pv-binder');
    expect(role.rules).to.deep.equal([
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'update'] },
    ]);
  });

  it('binds ServiceAccount topovol-<name> in the install namespace to its ClusterRole', function () {
    const objs = controllerIdentity(binder);
    expect(find(objs, 'ServiceAccount').map((o) => o.metadata)).to.deep.include.members([{ name: 'topovol-pv-binder', namespace: INSTALL_NAMESPACE, labels: objs[0]!.metadata.labels }]);
    const [crb] = find(objs, 'ClusterRoleBinding');
    expect(crb!.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'topovol-pv-binder' });
    expect(crb!.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'topovol-pv-binder', namespace: INSTALL_NAMESPACE }]);
  });

  it('the rollback ServiceAccount is the identity config/admission exempts', function () {
    const policy = readFileSync(path.join(repoRoot(), 'config', 'admission', 'rollback-marks-policy.yaml'), 'utf8');
    const [sa] = find(controllerIdentity(rollback), 'ServiceAccount');
    const user = serviceAccountUser(sa!.metadata.name, sa!.metadata.namespace);
    expect(user).to.equal('system:serviceaccount:topovol-system:topovol-rollback');
    expect(policy).to.contain(`'${user}'`);
  });

  it('the leader-election Role allows its own Lease (get, create, update, as manager.ts uses) and no other', function () {
    const objs = controllerIdentity(binder);
    const [role] = find(objs, 'Role');
    const rules = role!.rules as PolicyRule[];
    expect(role!.metadata.namespace).to.equal(INSTALL_NAMESPACE);
    for (const verb of ['get', 'update']) {
      expect(rulesAllow(rules, 'coordination.k8s.io', 'leases', verb, 'topovol-pv-binder'), verb).to.equal(true);
      expect(rulesAllow(rules, 'coordination.k8s.io', 'leases', verb, 'topovol-rollback'), verb).to.equal(false);
    }
    // create carries no name at authorization time, so it cannot be narrowed.
    expect(rulesAllow(rules, 'coordination.k8s.io', 'leases', 'create')).to.equal(true);
    expect(rulesAllow(rules, 'coordination.k8s.io', 'leases', 'delete', 'topovol-pv-binder')).to.equal(false);
    // Events come from the loop's ClusterRole; the audit-log coverage check found this copy unused.
    expect(rulesAllow(rules, '', 'events', 'create')).to.equal(false);
    const [rb] = find(objs, 'RoleBinding');
    expect(rb!.roleRef).to.deep.include({ kind: 'Role', name: role!.metadata.name });
    expect(rb!.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'topovol-pv-binder', namespace: INSTALL_NAMESPACE }]);
  });

  it('the all-in-one ServiceAccount is bound to every ClusterRole and every Lease', function () {
    const ds: ControllerDescriptor[] = [binder, rollback];
    const objs = allInOneIdentity(ds);
    expect(find(objs, 'ServiceAccount').map((o) => o.metadata.name)).to.deep.equal([ALL_IN_ONE_NAME]);
    expect(find(objs, 'ClusterRoleBinding').map((o) => (o.roleRef as { name: string }).name)).to.have.members(['topovol-pv-binder', 'topovol-rollback', 'system:auth-delegator']);
    const rules = find(objs, 'Role')[0]!.rules as PolicyRule[];
    for (const lease of ['topovol-pv-binder', 'topovol-rollback']) expect(rulesAllow(rules, 'coordination.k8s.io', 'leases', 'update', lease), lease).to.equal(true);
    expect(rules).to.deep.include.members(leaderElectionRules(['topovol-pv-binder', 'topovol-rollback']).filter((r) => r.resourceNames));
  });

  it('each identity may review the tokens and access of its /metrics scrapers (system:auth-delegator), and the reader role grants get on /metrics only', function () {
    for (const [objs, sa] of [[controllerIdentity(binder), 'topovol-pv-binder'], [allInOneIdentity([binder, rollback]), ALL_IN_ONE_NAME]] as const) {
      const delegator = find(objs, 'ClusterRoleBinding').filter((o) => (o.roleRef as { name: string }).name === 'system:auth-delegator');
      expect(delegator.map((o) => o.metadata.name)).to.deep.equal([`${sa}-auth-delegator`]);
      expect(delegator[0]!.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: sa, namespace: INSTALL_NAMESPACE }]);
    }
    const reader = metricsReaderRole();
    expect(reader.metadata.name).to.equal(METRICS_READER_ROLE);
    expect(reader.rules).to.deep.equal([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
  });

  it('namespaced rules get a ClusterRole of their own, bound by RoleBindings in the install namespace only (never cluster-wide)', function () {
    const own: PolicyRule[] = [{ apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['create', 'delete'] }];
    const capacity = fakeDescriptor('capacity', [{ apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['list', 'watch'] }], { namespacedRbac: own });
    const roles = clusterRoles(capacity);
    expect(roles.map((r) => r.metadata.name)).to.deep.equal(['topovol-capacity', 'topovol-capacity-namespaced']);
    expect(roles[1]!.rules).to.deep.equal(own);
    expect(rulesAllow(roles[0]!.rules as PolicyRule[], 'storage.k8s.io', 'csistoragecapacities', 'create')).to.equal(false);
    expect(clusterRoles(binder).map((r) => r.metadata.name)).to.deep.equal(['topovol-pv-binder']);
    for (const [objs, sa] of [[controllerIdentity(capacity), 'topovol-capacity'], [allInOneIdentity([binder, capacity]), ALL_IN_ONE_NAME]] as const) {
      expect(find(objs, 'ClusterRoleBinding').map((o) => (o.roleRef as { name: string }).name), sa).to.not.include('topovol-capacity-namespaced');
      const bindings = find(objs, 'RoleBinding').filter((o) => (o.roleRef as { name: string }).name === 'topovol-capacity-namespaced');
      expect(bindings, sa).to.have.length(1);
      expect(bindings[0]!.metadata.namespace).to.equal(INSTALL_NAMESPACE);
      expect(bindings[0]!.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'topovol-capacity-namespaced' });
      expect(bindings[0]!.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: sa, namespace: INSTALL_NAMESPACE }]);
    }
    expect(find(controllerIdentity(binder), 'RoleBinding').map((o) => (o.roleRef as { kind: string }).kind)).to.deep.equal(['Role']);
  });

  it('a descriptor with a wildcard rule cannot be rendered', function () {
    expect(() => clusterRole(fakeDescriptor('bad', [{ apiGroups: [''], resources: ['*'], verbs: ['get'] }]))).to.throw(/wildcard/);
  });
});
