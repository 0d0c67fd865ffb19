import type { ControllerDescriptor } from '@topovol/shared';

/** The zonal-label upgrade loop (seed 001, issue #4). Registered so --controllers knows the name. */
export const zonalPvUpgradeDescriptor: ControllerDescriptor = {
  name: 'zonal-pv-upgrade',
  description: 'turns legacy zone/region labels on PVs into nodeAffinity',
  // Off until the loop exists, so that '*' does not fail; asking for it explicitly says why.
  disabledByDefault: true,
  setup() {
    throw new Error('the zonal-pv-upgrade controller is not implemented yet (issue #4)');
  },
};
