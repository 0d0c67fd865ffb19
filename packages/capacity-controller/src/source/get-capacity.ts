import { counter, histogram, exponentialBuckets } from '@topovol/shared';
import { csiErrorCode, grpcCodeName, withCsiRetry } from '@topovol/shared/csi';
import type { CsiClient } from '@topovol/shared/csi';
import type { MeasuredCapacity } from '../objects/capacity-object.js';
import type { Segment } from '../segments/segment.js';

const calls = counter<'driver' | 'result'>({
  name: 'topovol_capacity_getcapacity_total',
  help: 'CSI GetCapacity calls made by the capacity controller, by driver and result (OK or the gRPC code name).',
  labelNames: ['driver', 'result'],
});
const latency = histogram<'driver'>({
  name: 'topovol_capacity_getcapacity_duration_seconds',
  help: 'Latency of single CSI GetCapacity calls (each retry counted on its own).',
  labelNames: ['driver'],
  buckets: exponentialBuckets(0.001, 2, 15),
});

class InvalidAnswer extends Error {}

export interface CapacitySourceOptions {
  driverName: string;
  /** Deadline of one call (--capacity-timeout). */
  timeoutMs: number;
  /** Tries per refresh for retryable failures (Unavailable, DeadlineExceeded, ...). */
  attempts: number;
  initialBackoffMs?: number;
}

/** Measures one request (parameters, segment): what the capacity loop asks, whoever answers. */
export interface CapacityMeter {
  get(parameters: Record<string, string>, segment: Segment, signal?: AbortSignal): Promise<MeasuredCapacity>;
}

/** GetCapacity of one item through the driver's controller service, with deadline, retries and metrics. */
export class CapacitySource implements CapacityMeter {
  constructor(
    private readonly csi: CsiClient,
    private readonly opts: CapacitySourceOptions,
  ) {}

  async get(parameters: Record<string, string>, segment: Segment, signal?: AbortSignal): Promise<MeasuredCapacity> {
    const driver = this.opts.driverName;
    const res = await withCsiRetry(
      async () => {
        const end = latency.startTimer({ driver });
        try {
          const c = await this.csi.getCapacity({ parameters, ...(Object.keys(segment).length > 0 ? { accessibleTopology: segment } : {}) }, { timeoutMs: this.opts.timeoutMs, signal });
          // The CSI spec says these MUST NOT be negative; publishing one would be refused by the API
          // server (or read as room). A wrong answer is a failed call, not a figure (not retried).
          if (c.availableCapacity < 0n || (c.maximumVolumeSize ?? 0n) < 0n) {
            calls.inc({ driver, result: 'InvalidResponse' });
            throw new InvalidAnswer(`GetCapacity of driver ${driver} answered a negative size (available_capacity ${c.availableCapacity}, maximum_volume_size ${c.maximumVolumeSize ?? 'unset'}), which the CSI spec forbids`);
          }
          calls.inc({ driver, result: 'OK' });
          return c;
        } catch (err) {
          if (err instanceof InvalidAnswer) throw err;
          const code = csiErrorCode(err);
          calls.inc({ driver, result: code === undefined ? 'Unknown' : grpcCodeName(code) });
          throw err;
        } finally {
          end();
        }
      },
      { attempts: this.opts.attempts, initialDelayMs: this.opts.initialBackoffMs ?? 200, signal },
    );
    return { available: res.availableCapacity, ...(res.maximumVolumeSize !== undefined ? { maximumVolumeSize: res.maximumVolumeSize } : {}) };
  }
}
