import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { isAlreadyExists, Resources } from '@topovol/shared';
import type { KubeClient, ResourceType } from '@topovol/shared';
import type { ControlPlane } from './control-plane.js';
import { INSTALL_NAMESPACE } from '@topovol/manifests';
import { namespacedRoleName, serviceAccountUser } from '@topovol/manifests';
import { applyManifestsServerSide, yamlFiles } from './apply-manifests.js';
import { repoRoot } from './repo-root.js';
import { eventually } from './eventually.js';
import { sharedControlPlane } from './shared-control-plane.js';

const installed = new WeakMap<ControlPlane, Promise<void>>();

/**
 * Applies the install namespace and the generated RBAC of config/rbac (every loop's
 * ServiceAccount, ClusterRole and leader-election Role, and the all-in-one variant) to a control
 * plane (the shared one by default), once per control plane and test process.
 */
export async function installGeneratedRbac(controlPlane?: ControlPlane): Promise<void> {
  const cp = controlPlane ?? (await sharedControlPlane());
  let done = installed.get(cp);
  if (!done) {
    const root = repoRoot();
    const files = [path.join(root, 'config', 'manager', 'namespace.yaml'), ...yamlFiles(path.join(root, 'config', 'rbac'))];
    done = applyManifestsServerSide(cp.adminClient(), files, 'topovol-tests').then(() => undefined);
    installed.set(cp, done);
  }
  return done;
}

/**
 * The client a loop under test runs with: authenticated as its own ServiceAccount
 * (`topovol-<controller>`) with a real token and only the generated RBAC, as in a cluster (ADR
 * 0007), on the shared control plane or the one given. Any permission the loop uses but does not
 * declare fails its suite with Forbidden, and the audit log records what it did use (see
 * mocha-rbac-coverage.ts).
 */
export async function controllerClient(controller: string, controlPlane?: ControlPlane): Promise<KubeClient> {
  const cp = controlPlane ?? (await sharedControlPlane());
  await installGeneratedRbac(cp);
  return cp.serviceAccountClient(INSTALL_NAMESPACE, `topovol-${controller}`);
}

/**
 * A kubeconfig file for a loop's own ServiceAccount (see controllerClient), for running the real
 * manager binary as that loop would run in a cluster; its requests appear in the audit log.
 */
export async function controllerKubeconfig(controller: string, controlPlane?: ControlPlane): Promise<string> {
  const cp = controlPlane ?? (await sharedControlPlane());
  await installGeneratedRbac(cp);
  return cp.writeServiceAccountKubeconfig(INSTALL_NAMESPACE, `topovol-${controller}`, path.join(cp.dir, `topovol-${controller}.kubeconfig`));
}

/** The user name a loop's ServiceAccount has in the audit log. */
export const controllerUser = (controller: string): string => serviceAccountUser(`topovol-${controller}`);

/** The groups kube-apiserver gives a ServiceAccount of `namespace` (for access reviews). */
const serviceAccountGroups = (namespace: string): string[] => ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];

/** The groups kube-apiserver gives a ServiceAccount of the install namespace (for access reviews). */
export const SERVICE_ACCOUNT_GROUPS: readonly string[] = serviceAccountGroups(INSTALL_NAMESPACE);

/** A RoleBinding of `clusterRole` to the install namespace's ServiceAccount `sa`, in `namespace` (kept if it exists). */
async function bindInNamespace(admin: KubeClient, name: string, namespace: string, clusterRole: string, sa: string): Promise<void> {
  try {
    await admin.create(Resources.roleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: INSTALL_NAMESPACE }],
    } as never);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/**
 * Binds a loop's namespaced rules (ControllerDescriptor.namespacedRbac, the ClusterRole
 * topovol-<controller>-namespaced) to its ServiceAccount in another namespace, as an operator who
 * runs it with `--capacity-namespace` elsewhere would (docs/install.md); the generated RBAC binds
 * them in the install namespace only. Resolves once RBAC allows the probe there.
 */
export async function bindNamespacedRules(controller: string, namespace: string, probe: AccessProbe, controlPlane?: ControlPlane): Promise<void> {
  const cp = controlPlane ?? (await sharedControlPlane());
  await installGeneratedRbac(cp);
  const admin = cp.adminClient();
  const role = namespacedRoleName({ name: controller });
  await bindInNamespace(admin, role, namespace, role, `topovol-${controller}`);
  await accessAllowed(admin, `topovol-${controller}`, { namespace, ...probe });
}

/** One request's attributes, as a SubjectAccessReview asks about them (`resource` may name a subresource: "pods/finalizers"). */
export interface AccessProbe {
  group: string;
  resource: string;
  verb: string;
  namespace?: string;
  name?: string;
}

/**
 * Resolves once RBAC allows the ServiceAccount `sa` of `saNamespace` (the install namespace unless
 * given) the probe: its authorizer follows Roles and bindings by watch, so a request right after a
 * binding's create could still be refused.
 */
export async function accessAllowed(admin: KubeClient, sa: string, probe: AccessProbe, saNamespace = INSTALL_NAMESPACE): Promise<void> {
  const [resource, subresource] = probe.resource.split('/');
  const attributes = { ...probe, resource, subresource: subresource ?? '' };
  await eventually(async () => {
    const review = await admin.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: serviceAccountUser(sa, saNamespace), groups: serviceAccountGroups(saNamespace), resourceAttributes: attributes } },
    });
    if (review.status?.allowed !== true) throw new Error(`RBAC does not allow ${saNamespace}/${sa} ${probe.verb} ${probe.resource}${probe.namespace ? ` in ${probe.namespace}` : ''} yet`);
  });
}

/** A ServiceAccount made for one test; cleanup deletes it and every binding made for it. */
export interface ThrowawayIdentity {
  serviceAccount: string;
  client: KubeClient;
  /** Binds `clusterRole` to it in `namespace`, and resolves once RBAC allows it `probe` there. */
  bindIn(namespace: string, clusterRole: string, probe: AccessProbe): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * A ServiceAccount of the install namespace under a fresh name (`<prefix>-<hex>`: the audit log
 * records it, and the end-of-run RBAC check, which watches the loops' own ServiceAccounts, does
 * not), bound cluster-wide to `clusterRoles`; resolves once RBAC allows it `ready`.
 */
export async function throwawayIdentity(prefix: string, clusterRoles: readonly string[], ready: AccessProbe): Promise<ThrowawayIdentity> {
  const cp = await sharedControlPlane();
  const admin = cp.adminClient();
  const sa = `${prefix}-${randomBytes(3).toString('hex')}`;
  const made: { resource: ResourceType; name: string; namespace?: string }[] = [{ resource: Resources.serviceAccounts, name: sa, namespace: INSTALL_NAMESPACE }];
  await admin.create(Resources.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: INSTALL_NAMESPACE } });
  for (const [i, role] of clusterRoles.entries()) {
    const name = i === 0 ? sa : `${sa}-${i}`;
    await admin.create(Resources.clusterRoleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: INSTALL_NAMESPACE }],
    } as never);
    made.push({ resource: Resources.clusterRoleBindings, name });
  }
  await accessAllowed(admin, sa, ready);
  const client = await cp.serviceAccountClient(INSTALL_NAMESPACE, sa);
  return {
    serviceAccount: sa,
    client,
    bindIn: async (namespace, clusterRole, probe) => {
      const name = `${clusterRole}-${sa}`;
      await bindInNamespace(admin, name, namespace, clusterRole, sa);
      made.push({ resource: Resources.roleBindings, name, namespace });
      await accessAllowed(admin, sa, { namespace, ...probe });
    },
    cleanup: async () => {
      client.close();
      for (const m of made.reverse()) await admin.delete(m.resource, m.name, m.namespace).catch(() => undefined);
    },
  };
}
