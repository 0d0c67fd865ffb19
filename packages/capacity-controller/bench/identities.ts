import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { controllerKubeconfig, controllerUser } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { capacityDescriptor } from '../src/capacity-descriptor.js';

/**
 * Both contenders authenticate as ServiceAccounts of the install namespace with tokens of their
 * own, as their pods would: the test control plane's audit policy records exactly those requests
 * (ControlPlane.auditLogPath), which is how the bench counts each contender's writes.
 */
export interface BenchIdentity {
  /** The audit log's user name. */
  user: string;
  kubeconfig: string;
}

const PROVISIONER_SA = 'csi-provisioner';
const RBAC = 'rbac.authorization.k8s.io/v1';

/** The install namespace, where the test control plane audits ServiceAccounts and the CSIStorageCapacity objects go. */
export function installNamespace(): string {
  // system:serviceaccount:<namespace>:<name>
  return controllerUser('capacity').split(':')[2]!;
}

/**
 * external-provisioner v6.3.0's own RBAC (deploy/kubernetes/rbac.yaml in
 * github.com/kubernetes-csi/external-provisioner), with its namespace set to the install
 * namespace: the ClusterRole external-provisioner-runner and the Role external-provisioner-cfg
 * (leases, CSIStorageCapacity objects, the owner lookup).
 */
function provisionerRbac(ns: string): KubeObject[] {
  const subjects = [{ kind: 'ServiceAccount', name: PROVISIONER_SA, namespace: ns }];
  const rule = (apiGroups: string[], resources: string[], verbs: string[]): Record<string, string[]> => ({ apiGroups, resources, verbs });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: PROVISIONER_SA, namespace: ns } },
    {
      apiVersion: RBAC,
      kind: 'ClusterRole',
      metadata: { name: 'external-provisioner-runner' },
      rules: [
        rule([''], ['persistentvolumes'], ['get', 'list', 'watch', 'create', 'patch', 'delete']),
        rule([''], ['persistentvolumeclaims'], ['get', 'list', 'watch', 'update']),
        rule(['storage.k8s.io'], ['storageclasses'], ['get', 'list', 'watch']),
        rule([''], ['events'], ['list', 'watch', 'create', 'update', 'patch']),
        rule(['snapshot.storage.k8s.io'], ['volumesnapshots'], ['get', 'list', 'watch', 'update']),
        rule(['snapshot.storage.k8s.io'], ['volumesnapshotcontents'], ['get', 'list']),
        rule(['storage.k8s.io'], ['csinodes'], ['get', 'list', 'watch']),
        rule([''], ['nodes'], ['get', 'list', 'watch']),
        rule(['storage.k8s.io'], ['volumeattachments'], ['get', 'list', 'watch']),
      ],
    } as KubeObject,
    { apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name: 'csi-provisioner-role' }, subjects, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'external-provisioner-runner' } } as KubeObject,
    {
      apiVersion: RBAC,
      kind: 'Role',
      metadata: { name: 'external-provisioner-cfg', namespace: ns },
      rules: [
        rule(['coordination.k8s.io'], ['leases'], ['get', 'watch', 'list', 'delete', 'update', 'create']),
        rule(['storage.k8s.io'], ['csistoragecapacities'], ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']),
        rule([''], ['pods'], ['get']),
        rule(['apps'], ['replicasets'], ['get']),
      ],
    } as KubeObject,
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name: 'csi-provisioner-role-cfg', namespace: ns },
      subjects,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'external-provisioner-cfg' },
    } as KubeObject,
  ];
}

async function createAll(admin: KubeClient, objects: KubeObject[]): Promise<void> {
  const resource = { ServiceAccount: Resources.serviceAccounts, ClusterRole: Resources.clusterRoles, ClusterRoleBinding: Resources.clusterRoleBindings, Role: Resources.roles, RoleBinding: Resources.roleBindings };
  for (const o of objects) await admin.create(resource[o.kind as keyof typeof resource], o);
}

/** external-provisioner's ServiceAccount with its upstream RBAC. Every external-provisioner of the run uses it. */
export async function provisionerIdentity(cp: ControlPlane, admin: KubeClient): Promise<BenchIdentity> {
  const ns = installNamespace();
  await createAll(admin, provisionerRbac(ns));
  const kubeconfig = await cp.writeServiceAccountKubeconfig(ns, PROVISIONER_SA, path.join(cp.dir, `${PROVISIONER_SA}.kubeconfig`));
  return { user: `system:serviceaccount:${ns}:${PROVISIONER_SA}`, kubeconfig };
}

/**
 * The capacity loop's ServiceAccount with the generated RBAC (config/rbac), as installed. The
 * descriptor's rules (its namespaced ones here cluster-wide) are bound too: config/rbac is rendered from them by hack/generate.mjs, and
 * binding them keeps the bench running the built loop while a descriptor edit awaits
 * regeneration (whether config/rbac is complete is the RBAC tests' business, not this bench's).
 */
export async function topovolIdentity(cp: ControlPlane, admin: KubeClient): Promise<BenchIdentity> {
  const kubeconfig = await controllerKubeconfig('capacity', cp);
  const [ns, name] = controllerUser('capacity').split(':').slice(2) as [string, string];
  const role = 'topovol-capacity-bench-descriptor';
  await createAll(admin, [
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name: role }, rules: [...(capacityDescriptor.rbac ?? []), ...(capacityDescriptor.namespacedRbac ?? [])] } as KubeObject,
    { apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name: role }, subjects: [{ kind: 'ServiceAccount', name, namespace: ns }], roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role } } as KubeObject,
  ]);
  return { user: controllerUser('capacity'), kubeconfig };
}
