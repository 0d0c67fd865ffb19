import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { retryDroppedConnection } from '@topovol/testing';
import { CapacityStatusWriter, CSIDriverCapacities, CSIDriverCapacityShards, DEFAULT_STATUS_SHARDS, NodeShardWriter } from '../../src/status/index.js';
import type { CapacityEntry, CSIDriverCapacity } from '../../src/status/index.js';
import { createCSIDriver, deleteDriverStatus, driverStatus, statusClients, uniqueDriver } from './status-helpers.js';

const NODES = 5_000;
const CLASSES = 10;
/** Well under etcd's default request limit (--max-request-bytes, 1.5 MiB), which a write of a bigger object fails. */
const LIMIT = 1 << 20;
const TOPOLOGY_KEY = 'topology.capacity.topovol.io/node';
/** Writers at once: the per-node writers of a DaemonSet run concurrently too. */
const BATCH = 25;

/** Each object's size as stored: custom resources are kept in etcd as JSON, managedFields included. */
async function storedSizes(admin: KubeClient, driverName: string): Promise<Map<string, number>> {
  const { shards } = await driverStatus(admin, driverName);
  const sizes = new Map<string, number>();
  const head = await admin.get<CSIDriverCapacity>(CSIDriverCapacities, driverName);
  sizes.set(head.metadata!.name!, Buffer.byteLength(JSON.stringify(head)));
  for (const s of shards) {
    const obj = await admin.get(CSIDriverCapacityShards, s.metadata!.name!);
    sizes.set(s.metadata!.name!, Buffer.byteLength(JSON.stringify(obj)));
  }
  return sizes;
}

// The aggregated status at the scale the single object could not hold (docs/adr/0010): 5,000
// per-node writers, each with its own field manager, plus the central writer's 10 classes × 5,000
// segments, written through the real writers on the real API server and etcd.
describe('capacity status at 5,000 nodes × 10 classes: every stored object stays under 1 MiB (real API server)', function () {
  this.timeout(900_000);
  let admin: KubeClient;
  let writerClient: KubeClient;
  let driverName = '';

  before(async function () {
    ({ admin, writerClient } = await statusClients());
    driverName = uniqueDriver('scale');
    await createCSIDriver(admin, driverName);
  });

  after(async function () {
    await deleteDriverStatus(admin, driverName);
    await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
  });

  const nodeName = (i: number): string => `worker-${String(i).padStart(5, '0')}`;
  const nodeGi = (i: number): number => (i % 100) + 1;
  const expiryMs = 3_600_000;

  it('5,000 per-node <ephemeral> pools and 50,000 class pools: sizes, pools and summary', async function () {
    // Every node writes its own pool, BATCH at a time, then each shard's pruner keeps its summary.
    // These 15,000 writes are made here, not by a loop whose queue would retry them: a connection
    // the API server drops under them is retried (both calls are server-side apply over a live read).
    const again = (call: () => Promise<unknown>): Promise<unknown> => retryDroppedConnection(call);
    const writers = Array.from({ length: NODES }, (_, i) => new NodeShardWriter(writerClient, { driverName, nodeName: nodeName(i), expiryMs }));
    for (let i = 0; i < NODES; i += BATCH) {
      await Promise.all(writers.slice(i, i + BATCH).map((w, j) => again(() => w.publish({ capacity: `${nodeGi(i + j)}Gi` }))));
    }
    // Two polls of the pruners: in the first, a pruner whose write returned its shard summarizes that
    // answer (it holds the pools written before it); the second reads the shard with every pool.
    for (const _poll of [1, 2]) for (let i = 0; i < NODES; i += BATCH) await Promise.all(writers.slice(i, i + BATCH).map((w) => again(() => w.maintain())));

    const ephemeralGi = Array.from({ length: NODES }, (_, i) => nodeGi(i)).reduce((a, b) => a + b, 0);
    const afterNodes = await driverStatus(admin, driverName);
    expect(afterNodes.head?.status).to.deep.include({ classCount: 1, poolCount: NODES, totalCapacity: `${ephemeralGi}Gi` });

    // The central writer: 10 classes × 5,000 one-node segments (as --capacity-topology=csinode
    // with a per-node topology key), in one publish that it splits by shard.
    const entries: CapacityEntry[] = [];
    for (let c = 0; c < CLASSES; c++) {
      for (let i = 0; i < NODES; i++) {
        entries.push({ storageClassName: `class-${c}`, pool: `${TOPOLOGY_KEY}=${nodeName(i)}`, nodeTopology: { matchLabels: { [TOPOLOGY_KEY]: nodeName(i) } }, capacity: `${c + 1}Gi`, maximumVolumeSize: '1Gi' });
      }
    }
    const central = new CapacityStatusWriter(writerClient, { driverName, fieldManager: 'topovol-capacity', expiryMs });
    const ready = [{ type: 'Ready', status: 'True' as const, reason: 'AllMeasured', message: `${entries.length} class and segment pairs measured` }];
    // A publish retried after a dropped connection may find its first attempt applied (wrote: false).
    const published = await retryDroppedConnection(() => central.publish(entries, ready));
    if (published.retries === 0) expect(published.value).to.deep.equal({ wrote: true });
    expect((await retryDroppedConnection(() => central.pruneExpired())).value).to.equal(0);

    const st = await driverStatus(admin, driverName);
    expect(st.shards).to.have.length(DEFAULT_STATUS_SHARDS);
    expect(st.storage.map((s) => [s.storageClassName, s.pools?.length])).to.deep.equal([['<ephemeral>', NODES], ...Array.from({ length: CLASSES }, (_, c) => [`class-${c}`, NODES])]);
    // The largest class sum is the ephemeral one (1..100 GiB per node) over class-9's 10 GiB × 5,000.
    expect(st.head?.status).to.deep.include({ classCount: CLASSES + 1, poolCount: NODES * (CLASSES + 1), totalCapacity: `${Math.max(ephemeralGi, CLASSES * NODES)}Gi` });
    expect(st.head?.status?.shards).to.have.length(DEFAULT_STATUS_SHARDS);

    const sizes = await storedSizes(admin, driverName);
    const shardSizes = [...sizes].filter(([n]) => n !== driverName).map(([, b]) => b);
    // Recorded for docs/adr/0010; the assertion is the limit, not these figures.
    console.log(`      stored sizes: head ${sizes.get(driverName)} B; ${shardSizes.length} shards ${Math.min(...shardSizes)}..${Math.max(...shardSizes)} B, total ${shardSizes.reduce((a, b) => a + b, 0)} B`);
    for (const [name, bytes] of sizes) expect(bytes, name).to.be.below(LIMIT);
  });
});
