import { errorMessage, gauge, isRefusal } from '@topovol/shared';
import type { KubeClient, Logger } from '@topovol/shared';
import type { CapacityEvents } from '../capacity-loop-deps.js';
import { DriverEpisode } from '../driver-episode.js';

/** The Event reason when the API server refuses the aggregated status's writes. */
export const STATUS_REFUSED_REASON = 'CapacityStatusRefused';

// A level, as topovol_capacity_object_writes_denied: the refused publish is retried at the status
// refresh, so a rate of errors alone is too thin for an alert.
const statusDenied = gauge<'driver'>({
  name: 'topovol_capacity_status_writes_denied',
  help: '1 while the API server refuses writes of the driver\'s CSIDriverCapacity status (authorization, an admission policy or webhook, an older CRD), else 0.',
  labelNames: ['driver'],
});

/**
 * The central loop's CSIDriverCapacity writes the API server refuses (403, 422, 400): the status
 * keeps its last figures and conditions (perhaps Ready=True) while nothing can change them, so the
 * first refusal of an episode is logged as an error and said as a Warning on the CSIDriver, and
 * `topovol_capacity_status_writes_denied` is 1 until a publish goes through.
 */
export class StatusRefusals {
  private readonly episode: DriverEpisode;

  constructor(private readonly d: { client: Pick<KubeClient, 'get'>; events: CapacityEvents; log: Logger; driverName: string }) {
    this.episode = new DriverEpisode({ ...d, reason: STATUS_REFUSED_REASON, level: (on) => statusDenied.set({ driver: d.driverName }, on ? 1 : 0) });
  }

  /** A publish failed with `err`: whether it was a refusal (said here; the caller tries again at its next refresh). */
  failed(err: unknown): boolean {
    if (!isRefusal(err)) return false;
    this.episode.begin(`the API server refuses writes of the aggregated capacity status (CSIDriverCapacity ${this.d.driverName}): it keeps its last figures and conditions until they are allowed: ${errorMessage(err)}`);
    return true;
  }

  /** A publish went through. */
  succeeded(): void {
    if (this.episode.end()) this.d.log.info('aggregated capacity status writes allowed again', { driver: this.d.driverName });
  }
}
