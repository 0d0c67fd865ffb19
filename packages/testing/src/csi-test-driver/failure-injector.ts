import type { GrpcStatus } from '@topovol/shared/csi';

export const CSI_METHODS = [
  'GetPluginInfo',
  'GetPluginCapabilities',
  'Probe',
  'ControllerGetCapabilities',
  'CreateVolume',
  'DeleteVolume',
  'GetCapacity',
  'NodeGetInfo',
] as const;

export type CsiMethodName = (typeof CSI_METHODS)[number];

/**
 * A failure for one method. With `code` the call fails with that gRPC status; with `delayMs` (or
 * `until`) the driver first stalls (a call whose deadline passes meanwhile is dropped, as a hung
 * driver would leave it); with only a stall the call then succeeds normally.
 */
export interface InjectedFailure {
  code?: GrpcStatus;
  message?: string;
  delayMs?: number;
  /**
   * Holds the call until this settles (after any delay), then fails with `code` or succeeds: for
   * tests that must order the driver's answer after something else happened, without a timer.
   */
  until?: Promise<unknown>;
  /** How many calls it affects; omitted means every call until cleared. */
  times?: number;
}

interface Queued {
  failure: InjectedFailure;
  remaining: number | undefined;
}

/** Failures per method, used up in the order injected. */
export class FailureInjector {
  private readonly queues = new Map<CsiMethodName, Queued[]>();

  inject(method: CsiMethodName, failure: InjectedFailure): void {
    if (failure.code === undefined && failure.delayMs === undefined && failure.until === undefined) throw new Error('an injected failure needs a code, a delay or a hold');
    if (failure.times !== undefined && failure.times < 1) throw new Error('times must be at least 1');
    const q = this.queues.get(method) ?? [];
    q.push({ failure, remaining: failure.times });
    this.queues.set(method, q);
  }

  clear(method?: CsiMethodName): void {
    if (method) this.queues.delete(method);
    else this.queues.clear();
  }

  /** The failure for the next call of `method`, using up one of its `times`. */
  take(method: CsiMethodName): InjectedFailure | undefined {
    const q = this.queues.get(method);
    const head = q?.[0];
    if (!q || !head) return undefined;
    if (head.remaining !== undefined && --head.remaining <= 0) q.shift();
    return head.failure;
  }
}
