import type { ControllerDescriptor, PolicyRule } from '@topovol/shared';
import { commonLabels, INSTALL_NAMESPACE } from './manifest.js';
import type { Manifest } from './manifest.js';
import { mergeRules } from './rbac-rules.js';

const RBAC = 'rbac.authorization.k8s.io/v1';
/** The ServiceAccount of the single-process variant (config/manager/all-in-one). */
export const ALL_IN_ONE_NAME = 'topovol-controller-manager';

/** topovol-<controller>: the ServiceAccount, ClusterRole and Lease name of one loop. */
export function controllerObjectName(d: Pick<ControllerDescriptor, 'name'>): string {
  return `topovol-${d.name}`;
}

export function serviceAccountUser(name: string, namespace = INSTALL_NAMESPACE): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * What the manager itself needs in the install namespace for the given loops: its Leases (one
 * per loop, see manager.ts: get, create, update). create cannot be narrowed by name (the name is
 * not known at authorization time), get/update can. Events need no rule here: every loop's
 * ClusterRole grants them cluster-wide (the RBAC coverage check found this one never used).
 */
export function leaderElectionRules(leaseNames: readonly string[]): PolicyRule[] {
  return [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [...leaseNames].sort() },
  ];
}

/** topovol-<controller>-namespaced: the ClusterRole of a loop's namespaced rules, bound only in a namespace. */
export function namespacedRoleName(d: Pick<ControllerDescriptor, 'name'>): string {
  return `${controllerObjectName(d)}-namespaced`;
}

export function clusterRole(d: ControllerDescriptor): Manifest {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: controllerObjectName(d), labels: commonLabels(d.name) },
    rules: mergeRules(d.rbac ?? [], `controller ${d.name}`),
  };
}

/** A loop's ClusterRole, and the one of its namespaced rules when it has any. */
export function clusterRoles(d: ControllerDescriptor): Manifest[] {
  if (!d.namespacedRbac?.length) return [clusterRole(d)];
  return [
    clusterRole(d),
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name: namespacedRoleName(d), labels: commonLabels(d.name) }, rules: mergeRules(d.namespacedRbac, `controller ${d.name} (namespaced)`) },
  ];
}

/** The ClusterRole a scraper (Prometheus's ServiceAccount) is bound to, to read every manager's /metrics. */
export const METRICS_READER_ROLE = 'topovol-metrics-reader';

/**
 * `get` on the non-resource path /metrics: what the managers' SubjectAccessReview asks for
 * (--metrics-secure). kubebuilder's metrics_reader_role.yaml; kube-controller-manager's own
 * /metrics wants the same of its scrapers (kubernetes #96216).
 */
export function metricsReaderRole(): Manifest {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: { name: METRICS_READER_ROLE, labels: commonLabels('metrics') },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  };
}

/**
 * A manager identity's binding to the built-in system:auth-delegator ClusterRole (create
 * tokenreviews and subjectaccessreviews, nothing else), so its /metrics can ask the API server who
 * a scraper is and whether it may read: what an aggregated API server or kube-rbac-proxy is bound to.
 */
function authDelegatorBinding(sa: string, component: string, namespace: string): Manifest {
  return clusterRoleBinding(`${sa}-auth-delegator`, component, 'system:auth-delegator', sa, namespace);
}

function serviceAccount(name: string, component: string, namespace: string): Manifest {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels: commonLabels(component) } };
}

function saSubject(name: string, namespace: string): Record<string, string> {
  return { kind: 'ServiceAccount', name, namespace };
}

function clusterRoleBinding(name: string, component: string, role: string, sa: string, namespace: string): Manifest {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: commonLabels(component) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [saSubject(sa, namespace)],
  };
}

/** A RoleBinding in `namespace` of the loop's namespaced ClusterRole (none when it has no namespaced rules). */
function namespacedBinding(d: ControllerDescriptor, bindingName: string, component: string, sa: string, namespace: string): Manifest[] {
  if (!d.namespacedRbac?.length) return [];
  return [
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name: bindingName, namespace, labels: commonLabels(component) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: namespacedRoleName(d) },
      subjects: [saSubject(sa, namespace)],
    },
  ];
}

function leaderElectionRole(sa: string, component: string, leases: string[], namespace: string): Manifest[] {
  const name = `${sa}-leader-election`;
  const labels = commonLabels(component);
  return [
    { apiVersion: RBAC, kind: 'Role', metadata: { name, namespace, labels }, rules: mergeRules(leaderElectionRules(leases), name) },
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [saSubject(sa, namespace)],
    },
  ];
}

/**
 * One loop's identity: its ServiceAccount bound to its ClusterRole and to system:auth-delegator
 * (for its /metrics), its namespaced rules bound in the install namespace, plus its leader-election Role.
 */
export function controllerIdentity(d: ControllerDescriptor, namespace = INSTALL_NAMESPACE): Manifest[] {
  const name = controllerObjectName(d);
  return [
    serviceAccount(name, d.name, namespace),
    clusterRoleBinding(name, d.name, name, name, namespace),
    authDelegatorBinding(name, d.name, namespace),
    ...namespacedBinding(d, namespacedRoleName(d), d.name, name, namespace),
    ...leaderElectionRole(name, d.name, [name], namespace),
  ];
}

/** The single-process variant: one ServiceAccount bound to every loop's ClusterRole and Lease. */
export function allInOneIdentity(ds: readonly ControllerDescriptor[], namespace = INSTALL_NAMESPACE): Manifest[] {
  const component = 'controller-manager';
  return [
    serviceAccount(ALL_IN_ONE_NAME, component, namespace),
    ...ds.map((d) => clusterRoleBinding(`${ALL_IN_ONE_NAME}-${d.name}`, component, controllerObjectName(d), ALL_IN_ONE_NAME, namespace)),
    authDelegatorBinding(ALL_IN_ONE_NAME, component, namespace),
    ...ds.flatMap((d) => namespacedBinding(d, `${ALL_IN_ONE_NAME}-${d.name}-namespaced`, component, ALL_IN_ONE_NAME, namespace)),
    ...leaderElectionRole(ALL_IN_ONE_NAME, component, ds.map(controllerObjectName), namespace),
  ];
}
