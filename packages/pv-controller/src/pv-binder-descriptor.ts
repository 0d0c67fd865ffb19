import type { ControllerDescriptor } from '@topovol/shared';
import { setupBinder } from './binder/binder-controller.js';
import { binderFlags } from './binder/binder-flags.js';

/** The persistent volume binder (seed 003 and seed 001's delayed binding), issue #4. */
export const pvBinderDescriptor: ControllerDescriptor = {
  name: 'pv-binder',
  description: 'binds claims to volumes, delayed binding, provisioning signals, release and reclaim',
  eventComponent: 'persistentvolume-controller',
  rbac: [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'update'] },
    { apiGroups: [''], resources: ['persistentvolumes/status'], verbs: ['update'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['update'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['nodes', 'pods'], verbs: ['get', 'list', 'watch'] },
    // list/watch: the external provisioner's Provisioning Events (stale selected-node check).
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
  ],
  flags: binderFlags,
  setup: setupBinder,
};
