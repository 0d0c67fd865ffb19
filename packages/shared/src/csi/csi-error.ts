import { status as GrpcStatus } from '@grpc/grpc-js';

export { GrpcStatus };

/** A failed CSI call with its gRPC status (e.g. GrpcStatus.UNIMPLEMENTED for an optional RPC). */
export class CsiError extends Error {
  override readonly name = 'CsiError';

  constructor(
    /** The CSI method, e.g. "GetCapacity". */
    readonly method: string,
    readonly code: GrpcStatus,
    /** The status message the driver (or the gRPC library, for deadlines and transport) gave. */
    readonly details: string,
  ) {
    super(`CSI ${method} failed: ${grpcCodeName(code)}: ${details}`);
  }

  get codeName(): string {
    return grpcCodeName(this.code);
  }
}

/** "DEADLINE_EXCEEDED" for 4, as gRPC spells its codes. */
export function grpcCodeName(code: number): string {
  return (GrpcStatus as unknown as Record<number, string | undefined>)[code] ?? `CODE_${code}`;
}

/** The gRPC status code of a CsiError, or undefined for anything else. */
export function csiErrorCode(err: unknown): GrpcStatus | undefined {
  return err instanceof CsiError ? err.code : undefined;
}

export function isUnimplemented(err: unknown): boolean {
  return csiErrorCode(err) === GrpcStatus.UNIMPLEMENTED;
}

export function isDeadlineExceeded(err: unknown): boolean {
  return csiErrorCode(err) === GrpcStatus.DEADLINE_EXCEEDED;
}

export function isResourceExhausted(err: unknown): boolean {
  return csiErrorCode(err) === GrpcStatus.RESOURCE_EXHAUSTED;
}

/**
 * Codes worth another try with the same request: the driver or transport was briefly unable
 * (UNAVAILABLE, e.g. a restarting driver socket), too slow (DEADLINE_EXCEEDED), busy or out of
 * space for now (RESOURCE_EXHAUSTED), or asked us to retry (ABORTED: an operation on the same
 * volume is in flight, per the CSI spec). Everything else (UNIMPLEMENTED, INVALID_ARGUMENT, ...)
 * will fail the same way again.
 */
export const RETRYABLE_CSI_CODES: ReadonlySet<GrpcStatus> = new Set([
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);

export function isRetryableCsiError(err: unknown, codes: ReadonlySet<GrpcStatus> = RETRYABLE_CSI_CODES): boolean {
  const code = csiErrorCode(err);
  return code !== undefined && codes.has(code);
}
