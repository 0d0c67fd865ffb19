import type { ControllerDescriptor } from '@topovol/shared';

/** Storage capacity tracking (seed 000, issue #5). Registered so --controllers knows the name. */
export const capacityDescriptor: ControllerDescriptor = {
  name: 'capacity',
  description: 'CSIStorageCapacity and aggregated capacity status per CSI driver',
  // Off until the loop exists, so that '*' does not fail; asking for it explicitly says why.
  disabledByDefault: true,
  setup() {
    throw new Error('the capacity controller is not implemented yet (issue #5)');
  },
};
