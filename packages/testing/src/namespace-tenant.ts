import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { accessAllowed } from './controller-identity.js';
import { sharedControlPlane } from './shared-control-plane.js';

/**
 * A client for a tenant of one namespace: a ServiceAccount there with every verb on what the
 * storage loops read from namespaces (pods, claims, and Events of both APIs: more than the built-in
 * edit role, which may not write Events) and nothing cluster-scoped. For the suites that play a
 * forging tenant. Resolves once RBAC allows it (accessAllowed).
 */
export async function namespaceTenant(admin: KubeClient, ns: string, name = 'tenant'): Promise<KubeClient> {
  await admin.create(Resources.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  await admin.create(Resources.roles, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: ns },
    rules: [
      { apiGroups: [''], resources: ['pods', 'persistentvolumeclaims', 'events'], verbs: ['*'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['*'] },
    ],
  } as never);
  await admin.create(Resources.roleBindings, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  } as never);
  await accessAllowed(admin, name, { group: '', resource: 'persistentvolumeclaims', verb: 'create', namespace: ns }, ns);
  return (await sharedControlPlane()).serviceAccountClient(ns, name);
}
