import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { CsiClient } from '../../src/csi/csi-client.js';
import { csiGrpcTarget, csiSocketPath } from '../../src/csi/csi-endpoint.js';
import { CsiError, GrpcStatus, isDeadlineExceeded, isResourceExhausted, isRetryableCsiError, isUnimplemented } from '../../src/csi/csi-error.js';
import { csiBackoffDelay, withCsiRetry } from '../../src/csi/csi-retry.js';
import { GiB } from '@topovol/testing/csi-test-driver';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';

// The CSI client against Topovol's CSI test driver over a real unix socket: real gRPC framing and
// the project's csi.proto on both ends, no mocks. (The sidecars' equivalent is
// kubernetes-csi/csi-lib-utils connection tests plus external-provisioner's capacity tests.)
const ZONE = 'topology.test.csi.topovol.dev/zone';

async function rejection(p: Promise<unknown>): Promise<CsiError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(CsiError);
    return err as CsiError;
  }
  throw new Error('expected the call to fail');
}

describe('CSI client against the CSI test driver (unix socket)', function () {
  let dir: string;
  let socket: string;
  let driver: CsiTestDriver;
  let client: CsiClient;

  beforeEach(async function () {
    dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-csi-'));
    socket = path.join(dir, 'csi.sock');
    driver = new CsiTestDriver({
      name: 'unit.csi.topovol.dev',
      vendorVersion: '1.2.3',
      capacity: [
        { segment: { [ZONE]: 'a' }, capacity: 10n * GiB },
        { segment: { [ZONE]: 'b' }, capacity: 3n * GiB },
        { segment: { [ZONE]: 'a' }, capacity: 100n * GiB, pool: 'fast', maximumVolumeSize: 8n * GiB },
      ],
    });
    await driver.start(`unix://${socket}`);
    client = new CsiClient(`unix://${socket}`, { timeoutMs: 5_000 });
  });

  afterEach(async function () {
    client.close();
    await driver.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('GetPluginInfo returns the configured name and a non-empty vendor version', async function () {
    expect(await client.getPluginInfo()).to.deep.equal({ name: 'unit.csi.topovol.dev', vendorVersion: '1.2.3', manifest: {} });
  });

  it('GetPluginCapabilities reports the controller service and accessibility constraints', async function () {
    const caps = await client.getPluginCapabilities();
    expect([...caps.services]).to.have.members(['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS']);
    expect(caps.controllerService).to.equal(true);
    expect(caps.volumeAccessibilityConstraints).to.equal(true);
  });

  it('ControllerGetCapabilities reports CREATE_DELETE_VOLUME and GET_CAPACITY', async function () {
    expect([...(await client.controllerGetCapabilities())]).to.have.members(['CREATE_DELETE_VOLUME', 'GET_CAPACITY']);
  });

  it('Probe follows the driver readiness', async function () {
    expect(await client.probe()).to.deep.equal({ ready: true });
    driver.ready = false;
    expect(await client.probe()).to.deep.equal({ ready: false });
  });

  describe('GetCapacity per segment', function () {
    const cases: { name: string; topology?: Record<string, string>; parameters?: Record<string, string>; want: bigint; max?: bigint }[] = [
      { name: 'zone a', topology: { [ZONE]: 'a' }, want: 10n * GiB },
      { name: 'zone b', topology: { [ZONE]: 'b' }, want: 3n * GiB },
      { name: 'a zone without storage', topology: { [ZONE]: 'c' }, want: 0n },
      { name: 'no topology: the whole default pool', want: 13n * GiB },
      { name: 'pool parameter selects the pool, with its maximum volume size', topology: { [ZONE]: 'a' }, parameters: { pool: 'fast' }, want: 100n * GiB, max: 8n * GiB },
      { name: 'a pool absent from the segment', topology: { [ZONE]: 'b' }, parameters: { pool: 'fast' }, want: 0n },
    ];
    for (const c of cases) {
      it(c.name, async function () {
        const got = await client.getCapacity({
          ...(c.topology ? { accessibleTopology: c.topology } : {}),
          ...(c.parameters ? { parameters: c.parameters } : {}),
        });
        expect(got).to.deep.equal(c.max === undefined ? { availableCapacity: c.want } : { availableCapacity: c.want, maximumVolumeSize: c.max });
      });
    }

    it('sends parameters, topology and volume capabilities as the driver sees them', async function () {
      await client.getCapacity({
        parameters: { pool: 'fast', 'csi.storage.k8s.io/fstype': 'ext4' },
        accessibleTopology: { [ZONE]: 'a' },
        volumeCapabilities: [{ accessMode: 'SINGLE_NODE_WRITER', accessType: 'mount', fsType: 'ext4' }, { accessMode: 'MULTI_NODE_MULTI_WRITER', accessType: 'block' }],
      });
      expect(driver.getCapacityRequests()).to.deep.equal([
        {
          parameters: { pool: 'fast', 'csi.storage.k8s.io/fstype': 'ext4' },
          accessibleTopology: { [ZONE]: 'a' },
          volumeCapabilities: [
            { accessMode: 'SINGLE_NODE_WRITER', accessType: 'mount', fsType: 'ext4' },
            { accessMode: 'MULTI_NODE_MULTI_WRITER', accessType: 'block' },
          ],
        },
      ]);
    });

    it('reflects capacity changed at runtime, exactly past 2^53 bytes', async function () {
      const huge = 2n ** 60n + 7n;
      driver.setCapacity({ [ZONE]: 'b' }, huge);
      expect((await client.getCapacity({ accessibleTopology: { [ZONE]: 'b' } })).availableCapacity).to.equal(huge);
      expect(driver.calls('GetCapacity')).to.equal(1);
    });
  });

  describe('errors carry the gRPC status code', function () {
    it('Unimplemented: a driver without GET_CAPACITY', async function () {
      const bare = new CsiTestDriver({ controllerCapabilities: ['CREATE_DELETE_VOLUME'] });
      const sock = path.join(dir, 'bare.sock');
      await bare.start(sock);
      const c = new CsiClient(sock);
      try {
        expect([...(await c.controllerGetCapabilities())]).to.deep.equal(['CREATE_DELETE_VOLUME']);
        const err = await rejection(c.getCapacity({ accessibleTopology: { [ZONE]: 'a' } }));
        expect(err.code).to.equal(GrpcStatus.UNIMPLEMENTED);
        expect(err.method).to.equal('GetCapacity');
        expect(isUnimplemented(err)).to.equal(true);
        expect(isRetryableCsiError(err)).to.equal(false);
      } finally {
        c.close();
        await bare.stop();
      }
    });

    it('DeadlineExceeded: a stalled driver call times out at the per-call deadline, and the next call works', async function () {
      driver.injectFailure('GetCapacity', { delayMs: 120_000, times: 1 });
      const err = await rejection(client.getCapacity({ accessibleTopology: { [ZONE]: 'a' } }, { timeoutMs: 200 }));
      expect(err.code).to.equal(GrpcStatus.DEADLINE_EXCEEDED);
      expect(isDeadlineExceeded(err)).to.equal(true);
      expect(isRetryableCsiError(err)).to.equal(true);
      expect((await client.getCapacity({ accessibleTopology: { [ZONE]: 'a' } })).availableCapacity).to.equal(10n * GiB);
      expect(driver.calls('GetCapacity')).to.equal(2);
    });

    it('ResourceExhausted: injected once, then the call succeeds', async function () {
      driver.injectFailure('GetCapacity', { code: GrpcStatus.RESOURCE_EXHAUSTED, times: 1 });
      const err = await rejection(client.getCapacity());
      expect(isResourceExhausted(err)).to.equal(true);
      expect((await client.getCapacity()).availableCapacity).to.equal(13n * GiB);
    });

    it('ResourceExhausted: CreateVolume larger than any segment', async function () {
      const err = await rejection(client.createVolume({ name: 'too-big', requiredBytes: 50n * GiB }));
      expect(err.code).to.equal(GrpcStatus.RESOURCE_EXHAUSTED);
    });

    it('any status code and message pass through unchanged', async function () {
      driver.injectFailure('GetPluginInfo', { code: GrpcStatus.FAILED_PRECONDITION, message: 'backend offline' });
      const err = await rejection(client.getPluginInfo());
      expect(err.code).to.equal(GrpcStatus.FAILED_PRECONDITION);
      expect(err.codeName).to.equal('FAILED_PRECONDITION');
      expect(err.details).to.equal('backend offline');
      // "always" until cleared
      await rejection(client.getPluginInfo());
      driver.clearFailures('GetPluginInfo');
      expect((await client.getPluginInfo()).name).to.equal('unit.csi.topovol.dev');
    });

    it('Unavailable: nothing listens on the socket', async function () {
      const c = new CsiClient(path.join(dir, 'nobody.sock'), { timeoutMs: 300 });
      try {
        const err = await rejection(c.probe());
        expect([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED]).to.include(err.code);
        expect(isRetryableCsiError(err)).to.equal(true);
        expect((await rejection(c.waitForReady(100))).code).to.equal(GrpcStatus.UNAVAILABLE);
      } finally {
        c.close();
      }
    });
  });

  describe('retry with exponential backoff', function () {
    it('succeeds after N retryable failures, pausing longer each time', async function () {
      driver.injectFailure('GetCapacity', { code: GrpcStatus.UNAVAILABLE, times: 3 });
      const retries: { attempt: number; code: number | undefined; delay: number }[] = [];
      const got = await withCsiRetry((attempt) => client.getCapacity({ accessibleTopology: { [ZONE]: 'b' } }, { timeoutMs: 2_000 + attempt }), {
        attempts: 5,
        initialDelayMs: 5,
        onRetry: (err, attempt, delay) => retries.push({ attempt, code: (err as CsiError).code, delay }),
      });
      expect(got.availableCapacity).to.equal(3n * GiB);
      expect(driver.calls('GetCapacity')).to.equal(4);
      expect(retries.map((r) => [r.attempt, r.code])).to.deep.equal([
        [1, GrpcStatus.UNAVAILABLE],
        [2, GrpcStatus.UNAVAILABLE],
        [3, GrpcStatus.UNAVAILABLE],
      ]);
      // 5, 10, 20 ms plus at most 10% jitter: each pause is longer than the one before.
      expect(retries[0]!.delay).to.be.within(5, 5.5);
      expect(retries[1]!.delay).to.be.within(10, 11);
      expect(retries[2]!.delay).to.be.within(20, 22);
    });

    it('gives up after the last attempt with the last error', async function () {
      driver.injectFailure('GetCapacity', { code: GrpcStatus.RESOURCE_EXHAUSTED });
      const err = await rejection(withCsiRetry(() => client.getCapacity(), { attempts: 3, initialDelayMs: 1 }));
      expect(err.code).to.equal(GrpcStatus.RESOURCE_EXHAUSTED);
      expect(driver.calls('GetCapacity')).to.equal(3);
    });

    it('does not retry non-retryable codes', async function () {
      driver.injectFailure('GetCapacity', { code: GrpcStatus.UNIMPLEMENTED });
      await rejection(withCsiRetry(() => client.getCapacity(), { attempts: 5, initialDelayMs: 1 }));
      expect(driver.calls('GetCapacity')).to.equal(1);
    });

    it('backoff grows by the factor and is capped', function () {
      const opts = { initialDelayMs: 100, factor: 2, maxDelayMs: 1_000 };
      expect([1, 2, 3, 4, 5, 10].map((a) => csiBackoffDelay(a, opts))).to.deep.equal([100, 200, 400, 800, 1_000, 1_000]);
    });
  });

  describe('endpoints', function () {
    const cases: [string, string, string][] = [
      ['unix:///run/csi/csi.sock', '/run/csi/csi.sock', 'unix:///run/csi/csi.sock'],
      ['unix:/run/csi/csi.sock', '/run/csi/csi.sock', 'unix:///run/csi/csi.sock'],
      ['/run/csi/csi.sock', '/run/csi/csi.sock', 'unix:///run/csi/csi.sock'],
      ['csi.sock', 'csi.sock', 'unix:csi.sock'],
    ];
    for (const [endpoint, file, target] of cases) {
      it(`${endpoint} → ${file}`, function () {
        expect(csiSocketPath(endpoint)).to.equal(file);
        expect(csiGrpcTarget(endpoint)).to.equal(target);
      });
    }

    it('refuses non-unix schemes', function () {
      expect(() => csiSocketPath('tcp://127.0.0.1:10000')).to.throw(/unix socket/);
    });

    it('a plain socket path works end to end', async function () {
      const c = new CsiClient(socket);
      try {
        expect((await c.getPluginInfo()).name).to.equal('unit.csi.topovol.dev');
      } finally {
        c.close();
      }
    });
  });
});
