import { expect } from 'chai';
import { csiErrorCode, CsiError, grpcCodeName, GrpcStatus, isRetryableCsiError } from '../../src/csi/csi-error.js';
import { csiBackoffDelay, withCsiRetry } from '../../src/csi/csi-retry.js';
import type { CsiRetryOptions } from '../../src/csi/csi-retry.js';

const err = (code: GrpcStatus, details = 'x'): CsiError => new CsiError('GetCapacity', code, details);

describe('CSI errors: which gRPC codes are worth another try', function () {
  // Another try can help only when the driver or transport was briefly unable (UNAVAILABLE), too
  // slow (DEADLINE_EXCEEDED), out of resources for now (RESOURCE_EXHAUSTED) or asked for it
  // (ABORTED: "an operation is pending for the volume", CSI spec, error scheme of every RPC); see
  // grpc/grpc doc/statuscodes.md. CANCELLED is ours (the caller's signal), so retrying it is wrong.
  const retryable = new Set<GrpcStatus>([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.ABORTED]);
  const codes = Object.values(GrpcStatus).filter((c): c is GrpcStatus => typeof c === 'number' && c !== GrpcStatus.OK);

  it('covers every gRPC status code', function () {
    expect(codes).to.have.length(16);
  });
  for (const code of codes) {
    it(`${grpcCodeName(code)}: ${retryable.has(code) ? 'retryable' : 'final'}`, function () {
      expect(isRetryableCsiError(err(code))).to.equal(retryable.has(code));
    });
  }

  it('a caller may narrow or widen the set', function () {
    expect(isRetryableCsiError(err(GrpcStatus.UNAVAILABLE), new Set([GrpcStatus.ABORTED]))).to.equal(false);
    expect(isRetryableCsiError(err(GrpcStatus.INTERNAL), new Set([GrpcStatus.INTERNAL]))).to.equal(true);
  });

  it('an error that is no CsiError has no code, even with a numeric `code` (a raw gRPC ServiceError, an HTTP status)', function () {
    for (const e of [Object.assign(new Error('14 UNAVAILABLE: raw'), { code: 14 }), Object.assign(new Error('Service Unavailable'), { code: 503 }), new Error('socket hang up')]) {
      expect(csiErrorCode(e), e.message).to.equal(undefined);
      expect(isRetryableCsiError(e), e.message).to.equal(false);
    }
  });

  it('names codes as gRPC spells them, and an unknown code by its number', function () {
    expect([grpcCodeName(GrpcStatus.DEADLINE_EXCEEDED), grpcCodeName(14), grpcCodeName(99)]).to.deep.equal(['DEADLINE_EXCEEDED', 'UNAVAILABLE', 'CODE_99']);
  });

  it('says which call failed, how, and what the driver said', function () {
    const e = err(GrpcStatus.UNAVAILABLE, 'connection refused');
    expect(e.name).to.equal('CsiError');
    expect(e.message).to.equal('CSI GetCapacity failed: UNAVAILABLE: connection refused');
    expect(String(e)).to.equal('CsiError: CSI GetCapacity failed: UNAVAILABLE: connection refused');
  });
});

/** Runs `fn` with Math.random fixed, so the jitter of a pause is known. */
async function withRandom<T>(value: number, fn: () => Promise<T>): Promise<T> {
  const real = Math.random;
  Math.random = () => value;
  try {
    return await fn();
  } finally {
    Math.random = real;
  }
}

/** A call failing with `failure` every time; counts its tries and the try numbers it was given. */
function failingCall(failure: Error): { call: (attempt: number) => Promise<never>; attempts: number[] } {
  const attempts: number[] = [];
  return { attempts, call: (attempt) => (attempts.push(attempt), Promise.reject(failure)) };
}

/** Pauses as withCsiRetry reports them, cut short so the test does not wait them out. */
async function pauses(opts: CsiRetryOptions, tries: ReturnType<typeof failingCall>): Promise<number[]> {
  const seen: number[] = [];
  const real = globalThis.setTimeout;
  globalThis.setTimeout = ((cb: () => void) => real(cb, 0)) as typeof setTimeout;
  try {
    await withCsiRetry(tries.call, { ...opts, onRetry: (_e, _a, delay) => seen.push(delay) }).catch(() => undefined);
  } finally {
    globalThis.setTimeout = real;
  }
  return seen;
}

describe('withCsiRetry: tries, pauses and cancellation', function () {
  it('by default: 5 tries, pauses from 100 ms doubling, each up to 10% longer', async function () {
    const tries = failingCall(err(GrpcStatus.UNAVAILABLE));
    const seen = await withRandom(0.5, () => pauses({}, tries));
    expect(tries.attempts).to.deep.equal([1, 2, 3, 4, 5]);
    expect(seen).to.deep.equal([105, 210, 420, 840]);
  });

  it('jitter 0: the pauses exactly', async function () {
    const seen = await withRandom(0.5, () => pauses({ attempts: 3, initialDelayMs: 10, jitter: 0 }, failingCall(err(GrpcStatus.ABORTED))));
    expect(seen).to.deep.equal([10, 20]);
  });

  it('the backoff before jitter: initial × factor^(try-1), capped at 10 s by default', function () {
    expect([1, 2, 3, 8, 20].map((a) => csiBackoffDelay(a))).to.deep.equal([100, 200, 400, 10_000, 10_000]);
    expect([1, 2, 3].map((a) => csiBackoffDelay(a, { initialDelayMs: 10, factor: 3 }))).to.deep.equal([10, 30, 90]);
  });

  it('a signal aborted while a try runs: that try is the last, with no pause', async function () {
    const ac = new AbortController();
    const failure = err(GrpcStatus.UNAVAILABLE);
    let tries = 0;
    const retried: number[] = [];
    const call = (): Promise<never> => {
      tries++;
      ac.abort();
      return Promise.reject(failure);
    };
    let thrown: unknown;
    await withCsiRetry(call, { attempts: 5, initialDelayMs: 60_000, signal: ac.signal, onRetry: (_e, a) => retried.push(a) }).catch((e: unknown) => (thrown = e));
    expect([thrown, tries, retried]).to.deep.equal([failure, 1, []]);
  });

  // A pause of 60 s that the abort did not end would run past mocha's timeout.
  it('a signal aborted during a pause ends it at once: no further try, the last error, no timer left', async function () {
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const live = new Set<NodeJS.Timeout>();
    globalThis.setTimeout = ((cb: () => void, ms?: number) => {
      const t = realSet(() => (live.delete(t), cb()), ms);
      live.add(t);
      return t;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((t: NodeJS.Timeout) => (live.delete(t), realClear(t))) as typeof clearTimeout;
    try {
      const ac = new AbortController();
      const tries = failingCall(err(GrpcStatus.DEADLINE_EXCEEDED));
      let thrown: unknown;
      await withCsiRetry(tries.call, { attempts: 5, initialDelayMs: 60_000, signal: ac.signal, onRetry: () => setImmediate(() => ac.abort()) }).catch((e: unknown) => (thrown = e));
      expect(csiErrorCode(thrown)).to.equal(GrpcStatus.DEADLINE_EXCEEDED);
      expect(tries.attempts).to.deep.equal([1]);
      expect(live.size, 'the pause timer is cleared').to.equal(0);
    } finally {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
    }
  });
});
