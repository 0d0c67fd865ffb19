import type { ControllerDescriptor } from '@topovol/shared';
import { setupZonalPvUpgrade } from './zonal/zonal-pv-upgrade-controller.js';

/** The zonal-label upgrade loop (KEP-490 "Topology-aware volume scheduling", "Zonal PV Upgrade"). */
export const zonalPvUpgradeDescriptor: ControllerDescriptor = {
  name: 'zonal-pv-upgrade',
  description: 'turns legacy zone/region labels on PVs into spec.nodeAffinity',
  // A one-off migration an operator opts into, as upstream's non-default controllers.
  disabledByDefault: true,
  eventComponent: 'topovol-zonal-pv-upgrade',
  rbac: [
    { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  setup: setupZonalPvUpgrade,
};
