import { Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient } from '@topovol/shared';
import type { CapacityEvents } from './capacity-loop-deps.js';

/**
 * A Warning on the driver's CSIDriver object, where `kubectl describe csidriver` shows it; nothing
 * when the driver has no CSIDriver object (the log line and the status condition still say it).
 */
export function warnOnDriver(client: Pick<KubeClient, 'get'>, events: CapacityEvents, driverName: string, reason: string, message: string): void {
  client
    .get<CSIDriver>(Resources.csiDrivers, driverName)
    .then((d) => events.event(d, 'Warning', reason, message))
    .catch(() => undefined);
}
