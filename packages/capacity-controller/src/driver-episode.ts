import type { KubeClient, Logger } from '@topovol/shared';
import type { CapacityEvents } from './capacity-loop-deps.js';
import { warnOnDriver } from './driver-warning.js';

/**
 * A problem of the driver's capacity loop said once per episode: at its start an error log line and
 * a Warning on the CSIDriver; `level` (a gauge) is 1 while it lasts and 0 once it ends, so an alert
 * can read it (own-node-report.ts, status/status-refusals.ts).
 */
export class DriverEpisode {
  private active = false;

  constructor(private readonly d: { client: Pick<KubeClient, 'get'>; events: CapacityEvents; log: Logger; driverName: string; reason: string; level: (on: boolean) => void }) {
    d.level(false);
  }

  /** The problem is there (again): said if this starts an episode. */
  begin(message: string, fields: Record<string, unknown> = {}): void {
    this.d.level(true);
    if (this.active) return;
    this.active = true;
    this.d.log.error(message, { driver: this.d.driverName, ...fields });
    warnOnDriver(this.d.client, this.d.events, this.d.driverName, this.d.reason, message);
  }

  /** The problem is gone: whether an episode ended. */
  end(): boolean {
    this.d.level(false);
    const was = this.active;
    this.active = false;
    return was;
  }
}
