import { errorMessage } from '@topovol/shared';
import type { KubeObject, Logger } from '@topovol/shared';
import { isRetryableCsiError } from '@topovol/shared/csi';
import type { CapacityEvents } from '../capacity-loop-deps.js';

/** The Event reason of a GetCapacity that fails for a class the way it will fail again. */
export const GETCAPACITY_FAILED_REASON = 'GetCapacityFailed';

/**
 * GetCapacity failures that a retry will not mend (InvalidArgument for a class's parameters, a
 * negative answer; not Unavailable or DeadlineExceeded, which a restarting driver gives), said once
 * per class until an item of the class is measured again: a Warning where `kubectl describe` finds
 * it (the StorageClass; per node, the Node: every instance would say it on the class otherwise).
 * The log line and `topovol_capacity_getcapacity_total{result}` say every failure.
 */
export class ClassFailureReports {
  private readonly failing = new Set<string>();

  constructor(private readonly d: { events: CapacityEvents; log: Logger; driverName: string; target: (storageClassName: string) => KubeObject | undefined }) {}

  failed(storageClassName: string, err: unknown): void {
    if (isRetryableCsiError(err) || this.failing.has(storageClassName)) return;
    this.failing.add(storageClassName);
    const target = this.d.target(storageClassName);
    if (target) this.d.events.event(target, 'Warning', GETCAPACITY_FAILED_REASON, `CSI driver ${this.d.driverName} cannot measure the capacity of storage class ${storageClassName}: ${errorMessage(err)}; its CSIStorageCapacity objects keep their last figures until it can`);
  }

  /** An item of the class was measured: a later failure is news again. */
  answered(storageClassName: string): void {
    this.failing.delete(storageClassName);
  }

  /** Only these classes are tracked now: a class deleted and made again is news again. */
  keepOnly(storageClassNames: ReadonlySet<string>): void {
    for (const c of this.failing) if (!storageClassNames.has(c)) this.failing.delete(c);
  }
}
