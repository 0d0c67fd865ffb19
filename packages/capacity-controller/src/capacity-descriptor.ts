import type { ControllerDescriptor } from '@topovol/shared';
import { setupCapacity } from './capacity-controller.js';
import { capacityFlags } from './capacity-flags.js';

/** Storage capacity tracking (seed 000, seed 002 pools), issue #5. */
export const capacityDescriptor: ControllerDescriptor = {
  name: 'capacity',
  description: 'CSIStorageCapacity objects and the aggregated CSIDriverCapacity status for one CSI driver',
  // It needs --csi-address next to a driver, so '*' does not start it.
  disabledByDefault: true,
  eventComponent: 'topovol-capacity',
  flags: capacityFlags,
  rbac: [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses', 'csinodes', 'csidrivers'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacities'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'] },
    { apiGroups: ['topovol.io'], resources: ['csidrivercapacities/status'], verbs: ['get', 'patch', 'update'] },
    // --capacity-ownerref-level: our pod and its owners.
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: ['apps'], resources: ['replicasets', 'statefulsets', 'deployments', 'daemonsets'], verbs: ['get'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  setup: setupCapacity,
};
