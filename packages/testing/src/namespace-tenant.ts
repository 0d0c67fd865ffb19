import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { eventually } from './eventually.js';
import { sharedControlPlane } from './shared-control-plane.js';

/**
 * A client for a tenant of one namespace: a ServiceAccount there with every verb on what the
 * storage loops read from namespaces (pods, claims, and Events of both APIs: more than the built-in
 * edit role, which may not write Events) and nothing cluster-scoped. For the suites that play a
 * forging tenant. Resolves once RBAC allows it (its authorizer follows Roles and RoleBindings by
 * watch, so a request right after the binding's create could still be refused).
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
  await eventually(async () => {
    const review = await admin.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${ns}:${name}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
          resourceAttributes: { namespace: ns, verb: 'create', group: '', resource: 'persistentvolumeclaims' },
        },
      },
    });
    if (review.status?.allowed !== true) throw new Error(`RBAC does not allow the tenant ${ns}/${name} to create claims yet`);
  });
  return (await sharedControlPlane()).serviceAccountClient(ns, name);
}
