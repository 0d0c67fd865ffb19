import type { ControllerDescriptor } from '@topovol/shared';
import { setupBinder } from './binder/binder-controller.js';
import { binderFlags } from './binder/binder-flags.js';

/** The persistent volume binder (seed 003 and seed 001's delayed binding), issue #4. */
export const pvBinderDescriptor: ControllerDescriptor = {
  name: 'pv-binder',
  description: 'binds claims to volumes, delayed binding, provisioning signals, release and reclaim',
  eventComponent: 'persistentvolume-controller',
  // Exactly what the suites use (the audit-log coverage check and the rbac-necessity test): the
  // loop reads from its informers; its one live read is the claim, before releasing its volume.
  rbac: [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch', 'update'] },
    { apiGroups: [''], resources: ['persistentvolumes/status'], verbs: ['update'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['update'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['nodes', 'pods'], verbs: ['list', 'watch'] },
    // list/watch: the external provisioner's Provisioning Events (stale selected-node check).
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
  ],
  flags: binderFlags,
  setup: setupBinder,
};
