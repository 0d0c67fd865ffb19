import { InvalidPathSegmentError, pathSegmentProblem } from '../client/path-segment.js';
import type { KubeObject } from './object-key.js';

/** What an informer needs to know to list and watch one resource type. */
export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** The collection path, e.g. /api/v1/pods or /apis/storage.k8s.io/v1/namespaces/ns/csistoragecapacities. */
/** `plural` or `plural.group`: how log lines, metrics and readiness messages name a resource. */
export function resourceLabel(r: ResourceType): string {
  return r.group ? `${r.plural}.${r.group}` : r.plural;
}

export function collectionPath(r: ResourceType, namespace?: string): string {
  const base = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const problem = r.namespaced && namespace ? pathSegmentProblem(namespace) : undefined;
  if (problem) throw new InvalidPathSegmentError('namespace', namespace!, problem);
  const ns = r.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${r.plural}`;
}

export function apiVersionOf(r: ResourceType): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}

/** A list's items carry no apiVersion/kind: sets them, so an item is self-describing (an Event's involvedObject, say). */
export function describeItem<T extends KubeObject>(r: ResourceType, item: T): T {
  item.apiVersion ??= apiVersionOf(r);
  item.kind ??= r.kind;
  return item;
}

const core = (plural: string, kind: string, namespaced: boolean): ResourceType => ({ group: '', version: 'v1', plural, kind, namespaced });
const storage = (plural: string, kind: string, namespaced = false): ResourceType => ({
  group: 'storage.k8s.io',
  version: 'v1',
  plural,
  kind,
  namespaced,
});

/** The resource types Topovol's loops watch. */
export const Resources = {
  pods: core('pods', 'Pod', true),
  nodes: core('nodes', 'Node', false),
  namespaces: core('namespaces', 'Namespace', false),
  persistentVolumes: core('persistentvolumes', 'PersistentVolume', false),
  persistentVolumeClaims: core('persistentvolumeclaims', 'PersistentVolumeClaim', true),
  configMaps: core('configmaps', 'ConfigMap', true),
  events: core('events', 'Event', true),
  storageClasses: storage('storageclasses', 'StorageClass'),
  csiNodes: storage('csinodes', 'CSINode'),
  csiDrivers: storage('csidrivers', 'CSIDriver'),
  csiStorageCapacities: storage('csistoragecapacities', 'CSIStorageCapacity', true),
  volumeAttachments: storage('volumeattachments', 'VolumeAttachment'),
  customResourceDefinitions: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
  },
  leases: { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
  // Installed from config/ (admission policies, RBAC); applyManifests knows them by kind.
  validatingAdmissionPolicies: { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicies', kind: 'ValidatingAdmissionPolicy', namespaced: false },
  validatingAdmissionPolicyBindings: { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicybindings', kind: 'ValidatingAdmissionPolicyBinding', namespaced: false },
  clusterRoles: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', kind: 'ClusterRole', namespaced: false },
  clusterRoleBindings: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false },
  roles: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role', namespaced: true },
  roleBindings: { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', kind: 'RoleBinding', namespaced: true },
  serviceAccounts: core('serviceaccounts', 'ServiceAccount', true),
} satisfies Record<string, ResourceType>;
