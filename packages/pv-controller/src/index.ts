export { pvBinderDescriptor } from './pv-binder-descriptor.js';
export { zonalPvUpgradeDescriptor } from './zonal-pv-upgrade-descriptor.js';
export { setupZonalPvUpgrade } from './zonal/zonal-pv-upgrade-controller.js';
export { decideZonalUpgrade } from './zonal/decide-zonal-upgrade.js';
export type { ZonalUpgradeDecision } from './zonal/decide-zonal-upgrade.js';
