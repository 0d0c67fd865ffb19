import type { KubeClient, Logger } from '@topovol/shared';
import type { CapacityEvents } from './capacity-loop-deps.js';
import { capacityMetrics } from './capacity-metrics.js';
import { DriverEpisode } from './driver-episode.js';

/** The Event reason when a per-node instance's --capacity-node-name names no Node. */
export const NODE_NOT_FOUND_REASON = 'CapacityNodeNotFound';

/**
 * Per node (--capacity-node-name): whether the Node it names exists, said when that changes. A
 * name that matches no Node (a typo in a hand-written manifest, $NODE_NAME not set from the
 * downward API) leaves the instance with no segment, so it publishes nothing, and without this
 * nothing said so: logged as an error, a Warning on the CSIDriver, and
 * `topovol_capacity_node_missing` at 1 while it lasts.
 */
export class OwnNodeReport {
  private readonly episode: DriverEpisode;

  constructor(private readonly d: { client: Pick<KubeClient, 'get'>; events: CapacityEvents; log: Logger; driverName: string; nodeName: string }) {
    this.episode = new DriverEpisode({ ...d, reason: NODE_NOT_FOUND_REASON, level: (on) => capacityMetrics.nodeMissing(d.driverName, on) });
  }

  /** After each sync, on the synced node cache: whether the node was found. */
  note(found: boolean): void {
    if (!found) {
      const message = `--capacity-node-name=${this.d.nodeName} names no Node: this per-node capacity instance publishes no CSIStorageCapacity objects until a Node of that name exists (set the flag from the pod's spec.nodeName through the downward API)`;
      this.episode.begin(message, { node: this.d.nodeName });
    } else if (this.episode.end()) {
      this.d.log.info('the node of --capacity-node-name exists now: publishing its capacity', { driver: this.d.driverName, node: this.d.nodeName });
    }
  }
}
