import type { KubeClient, Logger } from '@topovol/shared';
import type { CapacityEvents } from '../capacity-loop-deps.js';
import { capacityMetrics } from '../capacity-metrics.js';
import { warnOnDriver } from '../driver-warning.js';
import type { ActuatorCallbacks } from './object-actuator.js';

/**
 * What the loop does with denied CSIStorageCapacity writes (ObjectActuator.refusal): each is
 * counted; the first of an episode is logged as an error and recorded as a Warning on the CSIDriver;
 * the episode's start and end publish the status again (its Ready condition says it).
 */
export function writeDenialReports(d: { client: Pick<KubeClient, 'get'>; events: CapacityEvents; log: Logger; driverName: string; statusChanged: () => void }): Pick<ActuatorCallbacks, 'refused' | 'cleared'> {
  return {
    refused: (message, verb, first) => {
      capacityMetrics.refused(d.driverName, verb);
      if (!first) return;
      d.log.error('CSIStorageCapacity writes refused: the published figures go stale until they are allowed', { driver: d.driverName, error: message });
      warnOnDriver(d.client, d.events, d.driverName, 'CapacityWritesRefused', message);
      d.statusChanged();
    },
    cleared: () => {
      capacityMetrics.allowed(d.driverName);
      d.statusChanged();
    },
  };
}
