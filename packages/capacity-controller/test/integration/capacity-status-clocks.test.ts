import path from 'node:path';
import { expect } from 'chai';
import { Resources, ServerClock } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { CLOCK_SKEW_PRELOAD, controllerKubeconfig, createReadyNode, createTestNamespace, eventually, registerDriverOnNode, sharedControlPlane, startManagerBinary } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { GiB } from '@topovol/testing/csi-test-driver';
import { NodeShardWriter } from '../../src/status/index.js';
import type { StorageStatus } from '../../src/status/index.js';
import { bindCapacityRules, startDriver } from './capacity-harness.js';
import { createCSIDriver, deleteDriverStatus, driverStatus, headOf, poolsOf, statusClients, uniqueDriver } from './status-helpers.js';

const MIN = 60_000;
/** A node whose clock runs ten minutes ahead of the API server's. */
const AHEAD = 10 * MIN;
const EXPIRY = 2 * MIN;
const skewedWall = (): number => Date.now() + AHEAD;

const expiryOf = (storage: readonly StorageStatus[], pool: string): number => Date.parse(storage.flatMap((s) => s.pools ?? []).find((p) => p.name === pool)?.expiryTime ?? '');

/**
 * An expiry stamped on the API server's clock between `fromMs` and now (this machine's clock, which
 * is the server's): EXPIRY after some moment in between, give or take 5 s for the server clock's
 * estimate (a Date header's whole seconds, an answer whose headers were read late). Bounded by when
 * the write could have been made, not by when it is read, so a slow machine cannot fail it; a
 * ten-minute skew still does.
 */
function expectStampedSince(expiryMs: number, fromMs: number): void {
  expect(expiryMs, 'expiry').to.be.within(fromMs + EXPIRY - 5_000, Date.now() + EXPIRY + 5_000);
}

/**
 * Expiry times in the aggregated status are written by one instance per node and judged by another
 * (the shard's pruner). On its own clock, a pruner running ahead removes live pools of correct
 * nodes (their writers put them back at their next renewal: the pool is missing in between). On the
 * API server's clock (the Date header of its answers) the nodes' clocks do not matter.
 * docs/capacity-status.md, "Clocks".
 */
describe('capacity status: a node whose clock runs ahead (real API server)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let writerClient: KubeClient;

  before(async function () {
    ({ admin, writerClient } = await statusClients());
  });

  it('on its own clock a pruner ten minutes ahead removes a live pool; on the API server\'s it keeps it and stamps correct expiries', async function () {
    for (const clock of ['local', 'server'] as const) {
      const driverName = uniqueDriver(`clock-${clock}`);
      await createCSIDriver(admin, driverName);
      const common = { driverName, expiryMs: EXPIRY, shards: 1 };
      const live = new NodeShardWriter(writerClient, { ...common, nodeName: 'z-correct' });
      await live.publish({ capacity: '1Gi' });
      let now = skewedWall;
      let client = writerClient;
      if (clock === 'server') {
        const server = new ServerClock(undefined, skewedWall);
        client = writerClient.withServerClock(server);
        // In the manager the loop's informers have listed before the writer starts.
        await client.get(Resources.csiDrivers, driverName);
        now = () => server.now();
      }
      // The smallest live pool name: this writer prunes the shard.
      const ahead = new NodeShardWriter(client, { ...common, nodeName: 'a-ahead', now });
      const publishing = Date.now();
      await ahead.publish({ capacity: '2Gi' });
      await ahead.maintain();
      const { storage } = await driverStatus(admin, driverName);
      if (clock === 'local') {
        expect(poolsOf(storage, '<ephemeral>'), 'the hazard this guards against').to.deep.equal(['a-ahead']);
        expect(expiryOf(storage, 'a-ahead') - Date.now()).to.be.greaterThan(AHEAD);
      } else {
        expect(poolsOf(storage, '<ephemeral>')).to.deep.equal(['a-ahead', 'z-correct']);
        expectStampedSince(expiryOf(storage, 'a-ahead'), publishing);
        expect((await headOf(admin, driverName))?.status).to.deep.include({ poolCount: 2 });
      }
      await deleteDriverStatus(admin, driverName);
      await admin.delete(Resources.csiDrivers, driverName);
    }
  });

  it('the manager in per-node mode on a node whose clock runs ten minutes ahead keeps a correct node\'s pool and stamps correct expiries', async function () {
    const cp = await sharedControlPlane();
    const ns = await createTestNamespace(admin, 'capclock-');
    const driverName = uniqueDriver('clock-node');
    await createCSIDriver(admin, driverName);
    const node = `${ns}-a`;
    await createReadyNode(admin, node);
    await registerDriverOnNode(admin, node, driverName, []);
    const { driver, socket, cleanup } = await startDriver({ name: driverName });
    driver.setCapacity({}, 5n * GiB);
    const live = new NodeShardWriter(writerClient, { driverName, expiryMs: EXPIRY, shards: 1, nodeName: `${ns}-z` });
    await live.publish({ capacity: '1Gi' });
    let manager: ManagedProcess | undefined;
    await bindCapacityRules(ns);
    const starting = Date.now();
    try {
      manager = await startManagerBinary({
        name: `${ns}-manager`,
        kubeconfig: await controllerKubeconfig('capacity'),
        args: ['--controllers=capacity', '--leader-elect=false', `--csi-address=${socket}`, `--capacity-namespace=${ns}`, `--capacity-node-name=${node}`, '--capacity-ownerref-level=-1', '--capacity-status-shards=1', '--capacity-status-expiry=2m', '--capacity-poll-interval=1s'],
        logFile: path.join(cp.dir, `${ns}-manager.log`),
        env: { ...process.env, TOPOVOL_TEST_CLOCK_SKEW_MS: String(AHEAD) },
        nodeArgs: CLOCK_SKEW_PRELOAD,
      });
      // The head's totals are written by the shard's pruner right after it pruned: this instance.
      await eventually(async () => expect((await headOf(admin, driverName))?.status).to.deep.include({ poolCount: 2, totalCapacity: '6Gi' }), 60_000);
      const { storage } = await driverStatus(admin, driverName);
      expect(poolsOf(storage, '<ephemeral>')).to.deep.equal([node, `${ns}-z`].sort());
      expectStampedSince(expiryOf(storage, node), starting);
    } finally {
      await manager?.stop();
      await cleanup();
      await deleteDriverStatus(admin, driverName);
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
      await admin.delete(Resources.csiNodes, node).catch(() => undefined);
      await admin.delete(Resources.nodes, node).catch(() => undefined);
    }
  });
});
