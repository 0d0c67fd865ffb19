import path from 'node:path';
import { isAlreadyExists, Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
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

/**
 * Binds a loop's namespaced rules (ControllerDescriptor.namespacedRbac, the ClusterRole
 * topovol-<controller>-namespaced) to its ServiceAccount in another namespace, as an operator who
 * runs it with `--capacity-namespace` elsewhere would (docs/install.md); the generated RBAC binds
 * them in the install namespace only. Resolves once RBAC allows the probe there.
 */
export async function bindNamespacedRules(controller: string, namespace: string, probe: AccessProbe, opts: { serviceAccount?: string; controlPlane?: ControlPlane } = {}): Promise<void> {
  const cp = opts.controlPlane ?? (await sharedControlPlane());
  await installGeneratedRbac(cp);
  const admin = cp.adminClient();
  const role = namespacedRoleName({ name: controller });
  const sa = opts.serviceAccount ?? `topovol-${controller}`;
  try {
    await admin.create(Resources.roleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: sa === `topovol-${controller}` ? role : `${role}-${sa}`, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: INSTALL_NAMESPACE }],
    } as never);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await accessAllowed(admin, sa, { namespace, ...probe });
}

/** One request's attributes, as a SubjectAccessReview asks about them. */
export interface AccessProbe {
  group: string;
  resource: string;
  verb: string;
  namespace?: string;
}

/** Resolves once RBAC allows the install namespace's ServiceAccount `sa` the probe (its bindings seen). */
export async function accessAllowed(admin: KubeClient, sa: string, probe: AccessProbe): Promise<void> {
  const groups = ['system:serviceaccounts', `system:serviceaccounts:${INSTALL_NAMESPACE}`, 'system:authenticated'];
  await eventually(async () => {
    const review = await admin.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: serviceAccountUser(sa), groups, resourceAttributes: probe } },
    });
    if (review.status?.allowed !== true) throw new Error(`RBAC does not allow ${sa} ${probe.verb} ${probe.resource}${probe.namespace ? ` in ${probe.namespace}` : ''} yet`);
  });
}
