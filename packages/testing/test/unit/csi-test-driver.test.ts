import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { CsiClient } from '@topovol/shared/csi';
import { GrpcStatus } from '@topovol/shared/csi';
import type { CsiError } from '@topovol/shared/csi';
import type { TopologySegment } from '@topovol/shared/csi';
import { GiB, parseByteSize } from '../../src/csi-test-driver/byte-size.js';
import { CapacityModel } from '../../src/csi-test-driver/capacity-model.js';
import { CsiTestDriver } from '../../src/csi-test-driver/csi-test-driver.js';
import { FailureInjector } from '../../src/csi-test-driver/failure-injector.js';
import { csiServices } from '@topovol/shared/csi';
import type { CsiWire } from '@topovol/shared/csi';
import { parseDriverArgs } from '../../src/csi-test-driver/main.js';
import { eventually } from '../../src/eventually.js';
import { ManagedProcess } from '../../src/managed-process.js';
type NodeGetInfoResponse = CsiWire.NodeGetInfoResponse;

const ZONE = 'topology.test.csi.topovol.dev/zone';
const RACK = 'topology.test.csi.topovol.dev/rack';
const z = (zone: string): TopologySegment => ({ [ZONE]: zone });

describe('CSI test driver: capacity model', function () {
  function model(): CapacityModel {
    const m = new CapacityModel();
    m.set(z('a'), 10n * GiB);
    m.set(z('b'), 2n * GiB);
    m.set({ [ZONE]: 'c', [RACK]: '1' }, 4n * GiB);
    m.set({ [ZONE]: 'c', [RACK]: '2' }, 5n * GiB, { maximumVolumeSize: 1n * GiB });
    m.set(z('a'), 50n * GiB, { pool: 'fast' });
    return m;
  }

  describe('query (GetCapacity)', function () {
    const cases: { name: string; topology?: TopologySegment; pool?: string; want: { available: bigint; maximumVolumeSize?: bigint } }[] = [
      { name: 'one segment', topology: z('a'), want: { available: 10n * GiB } },
      { name: 'a zone sums its racks; the largest allowed volume is reported', topology: z('c'), want: { available: 9n * GiB, maximumVolumeSize: 4n * GiB } },
      { name: 'a rack inside the zone', topology: { [ZONE]: 'c', [RACK]: '2' }, want: { available: 5n * GiB, maximumVolumeSize: 1n * GiB } },
      { name: 'an unrelated key matches nothing', topology: { region: 'x' }, want: { available: 0n } },
      { name: 'the other pool', topology: z('a'), pool: 'fast', want: { available: 50n * GiB } },
      { name: 'no topology: the pool total', want: { available: 21n * GiB, maximumVolumeSize: 10n * GiB } },
    ];
    for (const c of cases) {
      it(c.name, function () {
        expect(model().query(c.topology, c.pool)).to.deep.equal(c.want);
      });
    }
  });

  describe('reserve (CreateVolume placement)', function () {
    const cases: { name: string; size: bigint; preferred: TopologySegment[]; requisite: TopologySegment[]; pool?: string; want?: TopologySegment }[] = [
      { name: 'first preferred with room', size: 1n * GiB, preferred: [z('b'), z('a')], requisite: [z('a'), z('b')], want: z('b') },
      { name: 'skips a preferred segment that is too small', size: 3n * GiB, preferred: [z('b'), z('a')], requisite: [z('a'), z('b')], want: z('a') },
      { name: 'falls back to requisite after preferred', size: 3n * GiB, preferred: [z('b')], requisite: [z('b'), z('c')], want: { [ZONE]: 'c', [RACK]: '1' } },
      { name: 'honours the maximum volume size', size: 2n * GiB, preferred: [{ [ZONE]: 'c', [RACK]: '2' }], requisite: [z('c')], want: { [ZONE]: 'c', [RACK]: '1' } },
      { name: 'never leaves the requisite set', size: 20n * GiB, preferred: [], requisite: [z('b'), z('c')] },
      { name: 'no requirements: first entry with room', size: 3n * GiB, preferred: [], requisite: [], want: z('a') },
      { name: 'pool selects entries', size: 20n * GiB, preferred: [], requisite: [z('a')], pool: 'fast', want: z('a') },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const m = model();
        const pool = c.pool ?? '';
        const got = m.reserve(c.size, pool, [...c.preferred, ...c.requisite], c.requisite);
        expect(got?.segment).to.deep.equal(c.want);
        if (c.want) {
          const before = model().get(c.want, pool)!.capacity;
          expect(m.get(c.want, pool)!.capacity).to.equal(before - c.size);
          m.release(c.size, pool, c.want);
          expect(m.get(c.want, pool)!.capacity).to.equal(before);
        }
      });
    }
  });
});

describe('CSI test driver: failure injection', function () {
  it('uses up limited failures in order, then keeps an unlimited one', function () {
    const f = new FailureInjector();
    f.inject('GetCapacity', { code: GrpcStatus.UNAVAILABLE, times: 2 });
    f.inject('GetCapacity', { code: GrpcStatus.INTERNAL });
    const seen = Array.from({ length: 5 }, () => f.take('GetCapacity')?.code);
    expect(seen).to.deep.equal([GrpcStatus.UNAVAILABLE, GrpcStatus.UNAVAILABLE, GrpcStatus.INTERNAL, GrpcStatus.INTERNAL, GrpcStatus.INTERNAL]);
    expect(f.take('CreateVolume')).to.equal(undefined);
    f.clear();
    expect(f.take('GetCapacity')).to.equal(undefined);
  });
});

describe('CSI test driver: controller service over a unix socket', function () {
  let dir: string;
  let driver: CsiTestDriver;
  let client: CsiClient;

  beforeEach(async function () {
    dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-csi-'));
    driver = new CsiTestDriver({ capacity: [{ segment: z('a'), capacity: 2n * GiB }, { segment: z('b'), capacity: 10n * GiB }] });
    await driver.start(path.join(dir, 'csi.sock'));
    client = new CsiClient(driver.endpoint);
  });

  afterEach(async function () {
    client.close();
    await driver.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('CreateVolume picks the first preferred segment with room and reports its topology', async function () {
    const v = await client.createVolume({
      name: 'pvc-1',
      requiredBytes: 5n * GiB,
      accessibilityRequirements: { requisite: [z('a'), z('b')], preferred: [z('a'), z('b')] },
    });
    expect(v.accessibleTopology).to.deep.equal([z('b')]);
    expect(v.capacityBytes).to.equal(5n * GiB);
    expect(driver.capacityOf(z('b'))).to.equal(5n * GiB);
    expect(driver.capacityOf(z('a'))).to.equal(2n * GiB);
    expect(driver.volumeByName('pvc-1')?.volumeId).to.equal(v.volumeId);
  });

  it('CreateVolume is idempotent by name and refuses an incompatible size', async function () {
    const first = await client.createVolume({ name: 'pvc-2', requiredBytes: 1n * GiB });
    const again = await client.createVolume({ name: 'pvc-2', requiredBytes: 1n * GiB });
    expect(again).to.deep.equal(first);
    expect(driver.volumes()).to.have.length(1);
    expect(driver.capacityOf(z('a'))).to.equal(1n * GiB);
    const err = (await client.createVolume({ name: 'pvc-2', requiredBytes: 3n * GiB }).catch((e: unknown) => e)) as CsiError;
    expect(err.code).to.equal(GrpcStatus.ALREADY_EXISTS);
  });

  it('CreateVolume validates its arguments', async function () {
    const noName = (await client.createVolume({ name: '' }).catch((e: unknown) => e)) as CsiError;
    expect(noName.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
    const noCaps = (await client.createVolume({ name: 'x', volumeCapabilities: [] }).catch((e: unknown) => e)) as CsiError;
    expect(noCaps.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
    const range = (await client.createVolume({ name: 'x', requiredBytes: 2n, limitBytes: 1n }).catch((e: unknown) => e)) as CsiError;
    expect(range.code).to.equal(GrpcStatus.OUT_OF_RANGE);
    expect(driver.volumes()).to.deep.equal([]);
  });

  it('DeleteVolume gives the capacity back and is idempotent', async function () {
    const v = await client.createVolume({ name: 'pvc-3', requiredBytes: 4n * GiB, accessibilityRequirements: { requisite: [z('b')] } });
    expect(driver.capacityOf(z('b'))).to.equal(6n * GiB);
    await client.deleteVolume(v.volumeId);
    await client.deleteVolume(v.volumeId);
    await client.deleteVolume('never-existed');
    expect(driver.capacityOf(z('b'))).to.equal(10n * GiB);
    expect(driver.volumes()).to.deep.equal([]);
    expect(driver.calls('DeleteVolume')).to.equal(3);
    expect(driver.deleteVolumeRequests()).to.deep.equal([v.volumeId, v.volumeId, 'never-existed']);
  });

  it('a stalled call the client abandons is dropped without effect', async function () {
    driver.injectFailure('CreateVolume', { delayMs: 120_000, times: 1 });
    const err = (await client.createVolume({ name: 'slow', requiredBytes: 1n * GiB }, { timeoutMs: 100 }).catch((e: unknown) => e)) as CsiError;
    expect(err.code).to.equal(GrpcStatus.DEADLINE_EXCEEDED);
    // The driver sees the cancellation and drops the call: it never creates the volume.
    await eventually(() => expect(driver.stalledCalls).to.equal(0), 10_000, 20);
    await client.createVolume({ name: 'after', requiredBytes: 1n * GiB });
    expect(driver.volumes().map((v) => v.name)).to.deep.equal(['after']);
    expect(driver.calls('CreateVolume')).to.equal(2);
  });

  it('a held call is answered once its hold is released, from the state at that moment', async function () {
    let release = (): void => undefined;
    driver.injectFailure('CreateVolume', { until: new Promise<void>((r) => (release = r)), times: 1 });
    const held = client.createVolume({ name: 'held', requiredBytes: 2n * GiB, accessibilityRequirements: { requisite: [z('a')], preferred: [z('a')] } });
    let answered = false;
    void held.then(
      () => (answered = true),
      () => (answered = true),
    );
    await eventually(() => expect(driver.calls('CreateVolume')).to.equal(1), 10_000, 20);
    // Meanwhile zone a's room is taken: the held call sees that once released.
    await client.createVolume({ name: 'first', requiredBytes: 2n * GiB, accessibilityRequirements: { requisite: [z('a')], preferred: [z('a')] } });
    expect(answered).to.equal(false);
    release();
    const err = (await held.catch((e: unknown) => e)) as CsiError;
    expect(err.code).to.equal(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(driver.volumes().map((v) => v.name)).to.deep.equal(['first']);
  });
});

/** NodeGetInfo as external-provisioner --node-deployment asks it at start. */
function nodeGetInfo(endpoint: string): Promise<NodeGetInfoResponse> {
  const m = csiServices().node.NodeGetInfo;
  const client = new Client(endpoint, credentials.createInsecure());
  return new Promise<NodeGetInfoResponse>((resolve, reject) => {
    client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, {}, (err: ServiceError | null, res?: NodeGetInfoResponse) => (err || !res ? reject(err ?? new Error('no response')) : resolve(res)));
  }).finally(() => client.close());
}

describe('CSI test driver: Node service of a per-node driver', function () {
  it('answers NodeGetInfo with its node id and topology, and only when it is a node driver', async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-csi-'));
    const perNode = new CsiTestDriver({ node: { nodeId: 'node-a', accessibleTopology: z('a') }, capacity: [{ segment: z('a'), capacity: GiB }] });
    const central = new CsiTestDriver();
    try {
      await perNode.start(path.join(dir, 'node.sock'));
      await central.start(path.join(dir, 'central.sock'));
      expect(await nodeGetInfo(perNode.endpoint)).to.deep.equal({ nodeId: 'node-a', maxVolumesPerNode: '0', accessibleTopology: { segments: z('a') } });
      expect(perNode.calls('NodeGetInfo')).to.equal(1);
      const err = (await nodeGetInfo(central.endpoint).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).to.equal(GrpcStatus.UNIMPLEMENTED);
    } finally {
      await perNode.stop();
      await central.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('CSI test driver: standalone process (main.js)', function () {
  it('parses its flags', function () {
    const args = parseDriverArgs(['--endpoint', 'unix:///tmp/x.sock', '--name', 'n', '--topology-key', 'k', '--node', 'n1=5Gi', '--node', 'n2', '--capacity', '1G', '--max-volume-size', '512Mi']);
    expect(args).to.deep.equal({
      endpoint: 'unix:///tmp/x.sock',
      name: 'n',
      vendorVersion: '0.1.0',
      capacity: [
        { segment: { k: 'n1' }, capacity: 5n * GiB, maximumVolumeSize: 512n * 1024n * 1024n },
        { segment: { k: 'n2' }, capacity: 1_000_000_000n, maximumVolumeSize: 512n * 1024n * 1024n },
      ],
    });
    expect(() => parseDriverArgs([])).to.throw(/--endpoint is required/);
    expect(() => parseByteSize('1.5Qi')).to.throw(/not a byte size/);
  });

  it('serves over its socket until SIGTERM', async function () {
    this.timeout(30_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-csi-'));
    const socket = path.join(dir, 'csi.sock');
    // dist/test/unit → dist/src/csi-test-driver/main.js
    const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/csi-test-driver/main.js');
    const proc = new ManagedProcess({
      name: 'csi-test-driver',
      command: process.execPath,
      args: [main, `--endpoint=unix://${socket}`, '--name=proc.csi.topovol.dev', `--topology-key=${ZONE}`, '--node=a=5Gi', '--node=b'],
      logFile: path.join(dir, 'driver.log'),
    });
    const client = new CsiClient(socket, { timeoutMs: 2_000 });
    try {
      const info = await eventually(() => client.getPluginInfo(), 20_000, 100);
      expect(info.name).to.equal('proc.csi.topovol.dev');
      expect((await client.getCapacity({ accessibleTopology: z('a') })).availableCapacity).to.equal(5n * GiB);
      expect((await client.getCapacity({ accessibleTopology: z('b') })).availableCapacity).to.equal(100n * GiB);
      await proc.stop();
      expect(await proc.waitForExit(), proc.logTail()).to.equal(0);
    } finally {
      client.close();
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
