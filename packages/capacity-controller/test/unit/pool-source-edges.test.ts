import { expect } from 'chai';
import { metricsRegistry } from '@topovol/shared';
import { CsiError, GrpcStatus } from '@topovol/shared/csi';
import type { Capacity, CsiCallOptions, CsiClient, GetCapacityParams } from '@topovol/shared/csi';
import { failure, metricSum } from '@topovol/testing';
import { poolServices } from '../../src/pools/pool-coverage.js';
import { parseConstrainedPools } from '../../src/pools/topology-constrained-pools.js';
import { CallSlots } from '../../src/source/call-slots.js';
import { CapacitySource } from '../../src/source/get-capacity.js';
import { connectToDriver } from '../../src/source/connect-driver.js';
import { requestKey, RunningRequests } from '../../src/source/running-requests.js';

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const GiB = 1n << 30n;

/**
 * Runs `fn` with every setTimeout pause recorded and cut to 0 ms: what a retry loop waits, without
 * the wait. Mocha keeps its own timer functions, so its timeouts are unaffected.
 */
async function pausesOf<T>(fn: () => Promise<T>): Promise<{ result: T; pauses: number[] }> {
  const real = globalThis.setTimeout;
  const pauses: number[] = [];
  globalThis.setTimeout = ((cb: () => void, ms?: number) => {
    pauses.push(ms ?? 0);
    return real(cb, 0);
  }) as typeof setTimeout;
  try {
    return { result: await fn(), pauses };
  } finally {
    globalThis.setTimeout = real;
  }
}

describe('parseConstrainedPools: a malformed list is a problem of its class, never a crash', function () {
  // The StorageClass parameter is written by hand (Ceph-CSI docs/design/proposals/topology.md);
  // whatever its JSON holds, the capacity loop must report it, not throw while desiring items.
  const raw = (v: unknown): string => JSON.stringify(v);
  const seg = (domainLabel: unknown, value: unknown): unknown => ({ domainLabel, value });
  const cases: { name: string; raw: string; want: RegExp }[] = [
    { name: 'an object instead of a list', raw: raw({ poolName: 'a', domainSegments: [seg(ZONE, 'z1')] }), want: /must be a non-empty JSON list/ },
    { name: 'a string instead of a list', raw: raw('a'), want: /must be a non-empty JSON list/ },
    { name: 'a null pool', raw: raw([null]), want: /\[0\]: poolName must be a non-empty string/ },
    { name: 'an empty pool name', raw: raw([{ poolName: '', domainSegments: [seg(ZONE, 'z1')] }]), want: /\[0\]: poolName must be a non-empty string/ },
    { name: 'domainSegments an object', raw: raw([{ poolName: 'a', domainSegments: seg(ZONE, 'z1') }]), want: /\[0\] \(a\): domainSegments must be a non-empty list/ },
    { name: 'domainSegments a string', raw: raw([{ poolName: 'a', domainSegments: 'zone=z1' }]), want: /\[0\] \(a\): domainSegments must be a non-empty list/ },
    { name: 'a null domain segment', raw: raw([{ poolName: 'a', domainSegments: [null] }]), want: /domainSegments\[0\] \(a\): needs a non-empty domainLabel and value/ },
    { name: 'a numeric domainLabel', raw: raw([{ poolName: 'a', domainSegments: [seg(5, 'z1')] }]), want: /domainSegments\[0\] \(a\): needs a non-empty domainLabel and value/ },
    { name: 'an empty domainLabel', raw: raw([{ poolName: 'a', domainSegments: [seg('', 'z1')] }]), want: /domainSegments\[0\] \(a\): needs a non-empty domainLabel and value/ },
    { name: 'a numeric value', raw: raw([{ poolName: 'a', domainSegments: [seg(ZONE, 1)] }]), want: /domainSegments\[0\] \(a\): needs a non-empty domainLabel and value/ },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const got = parseConstrainedPools({ topologyConstrainedPools: c.raw });
      expect(got && 'error' in got ? got.error : got).to.match(c.want);
    });
  }
});

describe('poolServices: what each pool leaves to the pools listed before it', function () {
  // Ceph-CSI takes the first listed pool whose domain matches the node (internal/util/topology.go,
  // matchPoolToTopology); `taken` is what the PoolNeverChosen Warning names.
  const z1 = { [REGION]: 'east', [ZONE]: 'z1' };
  const z2 = { [REGION]: 'east', [ZONE]: 'z2' };
  // A pool's domain is keyed by domainLabel, the name after a topology key's prefix, as Ceph-CSI's classes write it.
  const east = { name: 'east', domain: { region: 'east' } };
  const eastZ1 = { name: 'east-z1', domain: { region: 'east', zone: 'z1' } };

  it('a zone pool listed first takes its zone from the region pool', function () {
    expect(poolServices([z1, z2], [eastZ1, east]).map((s) => [s.pool.name, s.serves, s.wholeDomain, s.taken])).to.deep.equal([
      ['east-z1', [z1], true, []],
      ['east', [z2], false, [z1]],
    ]);
  });

  it('a zone pool listed after its region pool serves nothing: all of its domain is taken', function () {
    expect(poolServices([z1, z2], [east, eastZ1]).map((s) => [s.pool.name, s.serves, s.wholeDomain, s.taken])).to.deep.equal([
      ['east', [z1, z2], true, []],
      ['east-z1', [], false, [z1]],
    ]);
  });
});

describe('RunningRequests: calls of one request that overlap', function () {
  const k = requestKey({ pool: 'a' }, { [ZONE]: 'z1' });

  it('the earlier call still answers for items once the later one ends', function () {
    const r = new RunningRequests();
    r.begin(k, 100);
    r.begin(k, 200);
    r.end(k, 200);
    expect(r.covers(k, 50)).to.equal(true);
    r.end(k, 100);
    expect(r.covers(k, 50)).to.equal(false);
  });

  it('the later call still answers once the earlier one ends', function () {
    const r = new RunningRequests();
    r.begin(k, 100);
    r.begin(k, 200);
    r.end(k, 100);
    expect(r.covers(k, 150)).to.equal(true);
    r.end(k, 200);
    expect(r.covers(k, 0)).to.equal(false);
  });
});

describe('CallSlots: a slot handed to a waiter stays taken', function () {
  it('a call arriving after the hand-over waits its turn', async function () {
    const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    const slots = new CallSlots(1);
    const opens: (() => void)[] = [];
    let running = 0;
    let peak = 0;
    const call = (): Promise<void> =>
      slots.run(async () => {
        peak = Math.max(peak, ++running);
        await new Promise<void>((resolve) => opens.push(resolve));
        running--;
      });
    const done = [call(), call()];
    await tick();
    opens.shift()!(); // the first ends; the second gets its slot
    await tick();
    done.push(call());
    await tick();
    expect(peak).to.equal(1);
    while (opens.length > 0 || running > 0) {
      opens.shift()?.();
      await tick();
    }
    await Promise.all(done);
    expect(peak).to.equal(1);
  });
});

/** A CSI controller service answering GetCapacity from a script, and recording what it was asked. */
class ScriptedDriver {
  readonly asked: { params: GetCapacityParams; opts?: CsiCallOptions }[] = [];
  constructor(private readonly answers: (() => Capacity)[]) {}
  getCapacity(params: GetCapacityParams = {}, opts?: CsiCallOptions): Promise<Capacity> {
    this.asked.push({ params, ...(opts ? { opts } : {}) });
    const next = this.answers[Math.min(this.asked.length, this.answers.length) - 1]!;
    try {
      return Promise.resolve(next());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }
  asClient(): CsiClient {
    return this as unknown as CsiClient;
  }
}

const unavailable = (): Capacity => {
  throw new CsiError('GetCapacity', GrpcStatus.UNAVAILABLE, 'connection refused');
};

/** Observations of a histogram series: its +Inf bucket. */
async function observations(name: string, driver: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric(name);
  const values = m ? (await m.get()).values : [];
  return values.filter((v) => v.labels.le === '+Inf' && v.labels.driver === driver).reduce((s, v) => s + v.value, 0);
}

describe('CapacitySource: one GetCapacity request, its answer and its failures', function () {
  let n = 0;
  const driverName = (): string => `edges-${++n}.csi.topovol.dev`;

  it('asks with the class parameters, the segment as accessible topology, the deadline and the signal', async function () {
    const driver = new ScriptedDriver([() => ({ availableCapacity: 5n * GiB })]);
    const signal = new AbortController().signal;
    await new CapacitySource(driver.asClient(), { driverName: driverName(), timeoutMs: 1_234, attempts: 1 }).get({ pool: 'a' }, { [ZONE]: 'z1' }, signal);
    expect(driver.asked).to.deep.equal([{ params: { parameters: { pool: 'a' }, accessibleTopology: { [ZONE]: 'z1' } }, opts: { timeoutMs: 1_234, signal } }]);
  });

  it('an empty segment leaves accessible_topology unset: the CSI spec reads that as the total capacity', async function () {
    const driver = new ScriptedDriver([() => ({ availableCapacity: 5n * GiB })]);
    await new CapacitySource(driver.asClient(), { driverName: driverName(), timeoutMs: 1_000, attempts: 1 }).get({}, {});
    expect(driver.asked[0]!.params).to.deep.equal({ parameters: {} });
  });

  // CSI spec, GetCapacityResponse: available_capacity and maximum_volume_size MUST NOT be negative;
  // maximum_volume_size is a wrapper, so unset is not 0.
  const answers: { name: string; answer: Capacity; want: { available: bigint; maximumVolumeSize?: bigint } | RegExp }[] = [
    { name: 'zero available', answer: { availableCapacity: 0n }, want: { available: 0n } },
    { name: 'zero maximum volume size', answer: { availableCapacity: GiB, maximumVolumeSize: 0n }, want: { available: GiB, maximumVolumeSize: 0n } },
    { name: 'a maximum volume size', answer: { availableCapacity: 3n * GiB, maximumVolumeSize: GiB }, want: { available: 3n * GiB, maximumVolumeSize: GiB } },
    { name: 'no maximum volume size', answer: { availableCapacity: 3n * GiB }, want: { available: 3n * GiB } },
    { name: 'negative available', answer: { availableCapacity: -1n }, want: /negative size \(available_capacity -1, maximum_volume_size unset\)/ },
    { name: 'negative maximum volume size', answer: { availableCapacity: GiB, maximumVolumeSize: -1n }, want: /negative size .*maximum_volume_size -1/ },
  ];
  for (const c of answers) {
    it(`an answer with ${c.name}: ${c.want instanceof RegExp ? 'a failed call, not retried' : 'taken as it is'}`, async function () {
      const driver = new ScriptedDriver([() => c.answer]);
      const got = new CapacitySource(driver.asClient(), { driverName: driverName(), timeoutMs: 1_000, attempts: 3, initialBackoffMs: 1 }).get({}, { [ZONE]: 'z1' });
      if (c.want instanceof RegExp) expect(((await failure(got)) as Error).message).to.match(c.want);
      else expect(await got).to.deep.equal(c.want);
      expect(driver.asked).to.have.length(1);
    });
  }

  it('retries a retryable failure up to --capacity-getcapacity-attempts, pausing 200 ms first by default', async function () {
    const driver = new ScriptedDriver([unavailable, unavailable, () => ({ availableCapacity: GiB })]);
    const source = new CapacitySource(driver.asClient(), { driverName: driverName(), timeoutMs: 1_000, attempts: 3 });
    const { result, pauses } = await pausesOf(() => source.get({}, {}));
    expect(result).to.deep.equal({ available: GiB });
    expect(driver.asked).to.have.length(3);
    expect(pauses[0]).to.be.within(200, 220);
  });

  it('stops retrying once its signal aborts, with the last error', async function () {
    const ac = new AbortController();
    const driver = new ScriptedDriver([
      () => {
        ac.abort();
        return unavailable();
      },
      () => ({ availableCapacity: GiB }),
    ]);
    const source = new CapacitySource(driver.asClient(), { driverName: driverName(), timeoutMs: 1_000, attempts: 3, initialBackoffMs: 60_000 });
    const err = (await failure(source.get({}, {}, ac.signal))) as Error;
    expect(err).to.be.instanceOf(CsiError);
    expect(driver.asked).to.have.length(1);
  });

  it('counts each call by result (OK, the gRPC code name, Unknown, InvalidResponse) and times each one', async function () {
    const driver = driverName();
    const calls = (result: string): Promise<number> => metricSum('topovol_capacity_getcapacity_total', { driver, result });
    const scripted = new ScriptedDriver([
      unavailable,
      () => ({ availableCapacity: GiB }),
      () => {
        throw new Error('socket hang up');
      },
      () => ({ availableCapacity: -1n }),
    ]);
    const source = new CapacitySource(scripted.asClient(), { driverName: driver, timeoutMs: 1_000, attempts: 2, initialBackoffMs: 1 });
    await source.get({}, {});
    await failure(source.get({}, {}));
    await failure(source.get({}, {}));
    expect([await calls('OK'), await calls('UNAVAILABLE'), await calls('Unknown'), await calls('InvalidResponse')]).to.deep.equal([1, 1, 1, 1]);
    expect(await observations('topovol_capacity_getcapacity_duration_seconds', driver)).to.equal(4);
  });
});

describe('connectToDriver: its pauses', function () {
  const failing = (times: number): { getPluginInfo: () => Promise<{ name: string; vendorVersion: string; manifest: Record<string, string> }> } => {
    let calls = 0;
    return { getPluginInfo: () => (++calls <= times ? Promise.reject(new Error('connect ENOENT /csi/csi.sock')) : Promise.resolve({ name: 'd', vendorVersion: '1', manifest: {} })) };
  };
  const within = (pauses: number[], bases: number[]): void => {
    expect(pauses).to.have.length(bases.length);
    pauses.forEach((p, i) => expect(p, `pause ${i + 1}`).to.be.within(bases[i]!, bases[i]! * 1.1));
  };

  it('by default start at 250 ms and double up to 10 s', async function () {
    const { pauses } = await pausesOf(() => connectToDriver(failing(8)));
    within(pauses, [250, 500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  it('follow the given first pause and cap', async function () {
    const { pauses } = await pausesOf(() => connectToDriver(failing(4), { initialDelayMs: 5, maxDelayMs: 30 }));
    within(pauses, [5, 10, 20, 30]);
  });
});
