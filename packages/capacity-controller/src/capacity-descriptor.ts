import type { ControllerDescriptor } from '@topovol/shared';
import { capacityFlags } from './capacity-flags.js';

/** Storage capacity tracking (KEP-1472), with Ceph-CSI's topology-constrained pools. */
export const capacityDescriptor: ControllerDescriptor = {
  name: 'capacity',
  description: 'CSIStorageCapacity objects and the aggregated CSIDriverCapacity status for one CSI driver',
  // It needs --csi-address next to a driver, so '*' does not start it.
  disabledByDefault: true,
  eventComponent: 'topovol-capacity',
  flags: capacityFlags,
  rbac: [
    // Informers only: no get.
    // Claims: a failed provisioning (selected-node removed) refreshes the capacity it relied on.
    { apiGroups: [''], resources: ['nodes', 'persistentvolumes', 'persistentvolumeclaims'], verbs: ['list', 'watch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses', 'csinodes'], verbs: ['list', 'watch'] },
    // Cluster-wide list/watch: other publishers' objects of the same driver, in any namespace, are
    // reported (other-publishers.ts). Writes are namespaced (below).
    { apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['list', 'watch'] },
    // The CSIDriver, read as the owner of its CSIDriverCapacity.
    { apiGroups: ['storage.k8s.io'], resources: ['csidrivers'], verbs: ['get'] },
    // get/create the object, patch: the ownerReference added by apply once the CSIDriver appears;
    // delete: nothing here deletes one (garbage collection does, with the CSIDriver), but adding an
    // ownerReference to an object is admitted by OwnerReferencesPermissionEnforcement only from who
    // may delete it (plugin/pkg/admission/gc). Likewise for the shards below.
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacities'], verbs: ['get', 'create', 'patch', 'delete'] },
    // Server-side apply of conditions and the summary, JSON patch when pruning entries from before sharding.
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacities/status'], verbs: ['patch'] },
    // The pools, spread over shard objects (docs/adr/0010): get (a per-node writer reads only its
    // own), list (the central writer reads a driver's shards in one request), create, patch (owner).
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacityshards'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
    // Server-side apply of pools, JSON patch when pruning.
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacityshards/status'], verbs: ['patch'] },
    // list/watch: ProvisioningFailed Events refresh the capacity the claim relied on.
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
  ],
  // Only in its own namespace (--capacity-namespace, which must be the pod's own when the objects
  // have an owner: resolve-owner.ts), so a loop that misbehaves cannot write another driver's
  // CSIStorageCapacity objects elsewhere nor read other namespaces' pods. A --capacity-namespace
  // other than the install namespace needs a RoleBinding there to topovol-capacity-namespaced
  // (docs/install.md).
  namespacedRbac: [
    { apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['create', 'update', 'delete'] },
    // --capacity-ownerref-level: our pod and its owners.
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: ['apps'], resources: ['replicasets', 'statefulsets', 'deployments', 'daemonsets'], verbs: ['get'] },
  ],
  // Loaded when the loop is enabled: it brings gRPC and the CSI protobufs (17% of the manager's
  // module load), which a manager without this loop, the usual one, never needs. Its metric
  // families appear on /metrics only when it runs.
  setup: async (env) => (await import('./capacity-controller.js')).setupCapacity(env),
};
