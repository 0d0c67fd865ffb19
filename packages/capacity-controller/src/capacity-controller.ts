import { Controller, projectClaim, projectEvent, projectNode, PROVISIONING_FAILED_EVENTS, Resources, WorkQueue } from '@topovol/shared';
import type { ControllerEnv, CSINode, CSIStorageCapacity, Event, Node, PersistentVolume, PersistentVolumeClaim, Runnable, StorageClass } from '@topovol/shared';
import { CsiClient } from '@topovol/shared/csi';
import { connectToDriver } from './source/connect-driver.js';
import { F, readCapacityFlags, retryCapMs } from './capacity-flags.js';
import type { CapacityFlags } from './capacity-flags.js';
import { capacityKeyString, SYNC } from './capacity-key.js';
import type { CapacityKey } from './capacity-key.js';
import { CapacityLoop } from './capacity-loop.js';
import { managedSelector } from './objects/capacity-object.js';
import { otherPublishersReport, otherPublishersSelector } from './objects/other-publishers.js';
import { resolveOwner } from './objects/resolve-owner.js';
import { perNodeStatus } from './per-node-loop.js';
import { perNodeManagedBy } from './objects/managed-by.js';
import { parseSegmentMode } from './segments/segment-mode.js';
import { CapacitySource } from './source/get-capacity.js';
import { CapacityStatusWriter } from './status/index.js';

export const CAPACITY_CONTROLLER = 'capacity';
export const CENTRAL_FIELD_MANAGER = 'topovol-capacity';

/** Connects to the driver, waiting for it as long as it takes (connectToDriver), and learns its name. */
async function connect(flags: CapacityFlags, env: ControllerEnv): Promise<{ csi: CsiClient; driverName: string }> {
  const csi = new CsiClient(flags.csiAddress, { timeoutMs: flags.timeoutMs });
  const info = await connectToDriver(csi, {
    requireName: !flags.driverName,
    onRetry: (err, attempt) => {
      // One line of bounded length in /readyz, whatever the driver's error says.
      const why = `waiting for the CSI driver at ${flags.csiAddress}: ${String(err).replace(/\s+/g, ' ').slice(0, 300)}`;
      env.setupProgress(why);
      env.log.info('waiting for the CSI driver', { address: flags.csiAddress, attempt, error: String(err) });
    },
  });
  return { csi, driverName: flags.driverName || info.name };
}

/**
 * The capacity loop: one instance per CSI driver, or with --capacity-node-name one instance per
 * node (next to a per-node driver) that publishes only that node's CSIStorageCapacity objects and
 * its own pool of the aggregated status. Runnables, in start order: the workers, the GetCapacity
 * calls they start, per node the status writer, and the check for other publishers of the driver
 * (stopped in reverse order: the check, the writer and the calls end before the workers finish the
 * keys they hold).
 */
export async function setupCapacity(env: ControllerEnv): Promise<Runnable[]> {
  const flags = readCapacityFlags(env.options.extra);
  if (!flags.csiAddress) throw new Error(`the capacity controller needs --${F.csiAddress} (the CSI driver's controller socket)`);
  const mode = parseSegmentMode(flags.topology, flags.topologyPrefix, flags.domainLabels, flags.anyNode);
  if (typeof mode === 'string') throw new Error(mode);
  const { csi, driverName } = await connect(flags, env);
  // Two budgets of the same figures: one for the CSIStorageCapacity objects the scheduler reads,
  // one for the aggregated status, whose renewals come in bursts (every entry due at once, each
  // expiry/2). Shared, a renewal burst held back the objects of a node label change by seconds
  // (hack/bench/capacity-labels.sh).
  const writeClient = env.client.withRateLimit(flags.qps, flags.burst);
  const statusClient = env.client.withRateLimit(flags.qps, flags.burst);
  // Expiry times are written here and judged by every other instance (one per node in per-node
  // mode): all of them take time from the API server's clock, not their node's. The loop's own
  // intervals stay on this process's clock; figures' times are moved onto the server's when published.
  const now = (): number => env.client.serverClock.now();
  const toStatusTime = (localMs: number): number => localMs + (env.client.serverClock.skewMs() ?? 0);
  const source = new CapacitySource(csi, { driverName, timeoutMs: flags.timeoutMs, attempts: flags.attempts });
  const workers = env.options.concurrentWorkers;
  const perNode = flags.nodeName ? perNodeStatus({ env, flags, driverName, source, writeClient: statusClient, now }) : undefined;
  const managedBy = flags.nodeName ? perNodeManagedBy(flags.managedBy, flags.nodeName) : flags.managedBy;

  const caps = await csi.controllerGetCapabilities().catch(() => new Set<string>());
  if (!caps.has('GET_CAPACITY')) env.log.warn('the CSI driver does not announce GET_CAPACITY; GetCapacity is tried anyway, and after Unimplemented again every --capacity-unimplemented-retry', { driver: driverName });
  const owner = await resolveOwner(env.client, flags.ownerLevel, flags.namespace, env.log);
  const { informers } = env;
  // Per node, only this node's Node and CSINode matter (as external-provisioner's --node-deployment
  // takes its one segment from NodeGetInfo): watching every node would send each of thousands of
  // instances every other node's updates.
  const ownNode = flags.nodeName ? { fieldSelector: `metadata.name=${flags.nodeName}` } : {};
  const inf = {
    nodes: informers.forResource<Node>(Resources.nodes, { transform: projectNode, ...ownNode }),
    csiNodes: informers.forResource<CSINode>(Resources.csiNodes, ownNode),
    classes: informers.forResource<StorageClass>(Resources.storageClasses),
    volumes: informers.forResource<PersistentVolume>(Resources.persistentVolumes),
    claims: informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }),
    failures: informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS, transform: projectEvent }),
    objects: informers.forResource<CSIStorageCapacity>(Resources.csiStorageCapacities, {
      namespace: flags.namespace,
      labelSelector: managedSelector({ driverName, managedBy, namespace: flags.namespace }),
    }),
  };
  // Another publisher of this driver's capacity (external-provisioner --enable-capacity, or another
  // Topovol instance): reported, as nothing here can stop it.
  const others = informers.forResource<CSIStorageCapacity>(Resources.csiStorageCapacities, {
    labelSelector: otherPublishersSelector({ driverName, managedBy, base: flags.managedBy, ...(flags.nodeName ? { nodeName: flags.nodeName } : {}) }),
  });
  const status = new CapacityStatusWriter(statusClient, { driverName, fieldManager: CENTRAL_FIELD_MANAGER, expiryMs: flags.expiryMs, shards: flags.statusShards, now, log: env.log });
  const queue = new WorkQueue<CapacityKey>(CAPACITY_CONTROLLER, { keyString: capacityKeyString, maxBackoffMs: retryCapMs(flags.pollIntervalMs) });
  const loop = new CapacityLoop(
    inf,
    source,
    writeClient,
    status,
    env.events,
    queue,
    {
      driverName,
      immediateBinding: flags.immediate,
      // Per node, the <ephemeral> pool is the per-node writer's.
      ephemeral: flags.ephemeral && !perNode,
      mode,
      ...(flags.nodeName ? { onlyNode: flags.nodeName } : {}),
      identity: { driverName, managedBy, namespace: flags.namespace, ...(owner ? { owner } : {}) },
      pollIntervalMs: flags.pollIntervalMs,
      minRefreshMs: flags.minRefreshMs,
      statusRefreshMs: Math.max(1_000, Math.floor(flags.expiryMs / 3)),
      unimplementedRetryMs: flags.unimplementedRetryMs,
      callSlots: workers,
      dryRun: env.options.dryRun,
      toStatusTime,
      otherPublisherObjects: () => others.cache.list(),
    },
    env.log,
  );
  // No startKeys (Controller): its keys are bounded on a standby (SYNC and STATUS; item keys only
  // for items a SYNC has planned, and a standby plans none), so adds before start are kept.
  const controller = new Controller<CapacityKey>(CAPACITY_CONTROLLER, loop.reconcile, { queue, workers });
  loop.register();
  queue.add(SYNC);
  const onNode = flags.nodeName;
  const target = onNode ? (): Node | undefined => inf.nodes.cache.get(onNode) : (cls: string): StorageClass | undefined => inf.classes.cache.get(cls);
  const otherPublishers = otherPublishersReport(others, target, env.events, env.log, driverName, flags.pollIntervalMs);
  env.log.info('capacity loop set up', { driver: driverName, topology: flags.topology, namespace: flags.namespace, managedBy, node: flags.nodeName || undefined });
  return perNode ? [controller, loop.getCapacityCalls, perNode, otherPublishers] : [controller, loop.getCapacityCalls, otherPublishers];
}
