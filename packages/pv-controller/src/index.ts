export { pvBinderDescriptor } from './pv-binder-descriptor.js';
export { zonalPvUpgradeDescriptor } from './zonal-pv-upgrade-descriptor.js';
