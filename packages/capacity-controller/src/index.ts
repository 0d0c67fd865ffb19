export { capacityDescriptor } from './capacity-descriptor.js';
export { capacityFlags } from './capacity-flags.js';
export { POOLS_PARAMETER, POOL_NAME_PARAMETER, parseConstrainedPools } from './pools/topology-constrained-pools.js';
export { LABEL_POOL } from './objects/capacity-object.js';
