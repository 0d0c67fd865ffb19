// Every loop this manager ships, in --controllers order. Shared by the executable and by
// hack/generate.mjs (config/rbac, config/manager and docs/reference are rendered from it), so a
// loop added here is both runnable and deployable.
import { pvBinderDescriptor, zonalPvUpgradeDescriptor } from '@topovol/pv-controller';
import { capacityDescriptor } from '@topovol/capacity-controller';
import { rollbackDescriptor } from '@topovol/rollback-controller';

export const descriptors = [pvBinderDescriptor, zonalPvUpgradeDescriptor, capacityDescriptor, rollbackDescriptor];

/** The loop that runs next to a CSI driver (config/manager's sidecar and per-node examples). */
export const capacityControllerName = capacityDescriptor.name;
