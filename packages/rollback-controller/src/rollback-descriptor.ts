import type { ControllerDescriptor } from '@topovol/shared';
import { setupRollback } from './rollback/rollback-controller.js';
import { rollbackFlags } from './rollback/rollback-flags.js';

/** Volume provisioning rollback (seed 004), issue #6. */
export const rollbackDescriptor: ControllerDescriptor = {
  name: 'rollback',
  description: 'undoes still-unused volumes when a pod has to move to another node',
  // Opt-in: it deletes and recreates claims, which an operator should choose knowingly.
  disabledByDefault: true,
  flags: rollbackFlags,
  rbac: [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['volumeattachments'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list', 'watch'] },
  ],
  setup: setupRollback,
};
