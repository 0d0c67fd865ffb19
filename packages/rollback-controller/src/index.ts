import type { ControllerDescriptor } from '@topovol/shared';

/** Volume provisioning rollback (seed 004, issue #6). Registered so --controllers knows the name. */
export const rollbackDescriptor: ControllerDescriptor = {
  name: 'rollback',
  description: 'undoes still-unused volumes when a pod has to move to another node',
  // Off until the loop exists, so that '*' does not fail; asking for it explicitly says why.
  disabledByDefault: true,
  setup() {
    throw new Error('the rollback controller is not implemented yet (issue #6)');
  },
};
